// The tile configuration of the attention kernels as one constexpr function
// of the tuning parameters, so that the kernels (their traits, shared-memory
// layouts and the warpgroup path's register share) and the host (the launch
// grid, the TMA boxes, the autotuner's search space) derive every number
// from the same rules, each written once. Plain C++17 on purpose: it
// compiles under NVRTC and with the host compiler (tile_config.h, the
// host's name for it), and holds no device code. It describes valid shapes;
// the kernels reject the others with a static_assert that says why.
#pragma once

// NVRTC compiles no function without an execution space (it would be host
// code); the host compiler knows none.
#if defined(__CUDACC_RTC__)
#define ATTNJIT_TILE_CONSTEXPR __host__ __device__ constexpr
#else
#define ATTNJIT_TILE_CONSTEXPR constexpr
#endif

namespace attnjit {
namespace attention {

// The tuning parameters of a variant (specs/attention.yaml `tuning`), and
// whether the compile options cap the registers per thread.
struct TileShape {
  int head_dim, block_m, block_n, warps, stages, min_blocks;
  // pack_gqa: 0 a tile holds one query head, 1 the heads of a kv head
  // interleaved.
  int pack_gqa;
  bool wgmma, register_cap;
  bool kv_fp8 = false;  // K/V stored as fp8 (kv_dtype), converted on the way in
  bool split_kv = false;  // the split-KV epilogue (its flag in shared memory)
  // Shared memory of one SM on the target (smem_per_sm(); 0: unknown, then
  // min_blocks is taken as it is).
  int smem_per_sm = 0;
  // The decode block (tuning param decode_mma; TileConfig::mma_decode
  // says where it applies).
  bool decode_mma = false;
  // Its products swapped (decode_mma 2: DecodeSwapLayout, block_m 8).
  bool decode_swap = false;
  // V tiles in blocks of 16 key rows, each one TMA box of all of D (the
  // small_pages flag; TileConfig::v_block_rows says where it applies).
  bool small_pages = false;
  // The producer's warps issuing copies (tuning param producer_warps;
  // TileConfig::producer_warps says where it applies).
  int producer_warps = 1;
  // D of v and o where it differs from head_dim (the head_dim_v flag; 0:
  // head_dim). The warpgroup path only, 16-bit K/V.
  int head_dim_v = 0;
};

// Shared memory of one SM that blocks can have, by compute capability
// (major * 10 + minor); 0 for an unknown one.
ATTNJIT_TILE_CONSTEXPR int smem_per_sm(int sm) {
  return sm >= 90 ? 233472 : sm == 80 || sm == 87 ? 167936 : sm >= 86 ? 102400 : 0;
}
// What the driver keeps of an SM's shared memory per resident block.
constexpr int kReservedSmemPerBlock = 1024;

struct TileConfig {
  TileShape shape;
  int threads;              // per block: the consumer warps, plus the producer warpgroup (wgmma)
  int consumer_threads;     // the threads that run the MMAs: shape.warps * 32
  int warpgroups;           // consumer warpgroups of 4 warps (wgmma; 0 otherwise)
  // wgmma: the consumer warpgroups that share one 64-row slice of the tile
  // and split D between them (1: each warpgroup owns 64 rows and all of D).
  // Heads wider than 256 (d_split_for): 64 rows x D of fp32 output
  // accumulators would be 2 x D registers per thread, so each of two
  // warpgroups owns D / 2 columns of O, computes the scores over its half
  // of D, and the two add their partial scores through shared memory
  // (mainloop_sm90.cuh, Consumer::exchange_scores).
  int d_split;
  unsigned exchange_offset;  // d_split 2: the partial scores' buffers (set_shared_memory)
  int producer_warpgroups;  // wgmma: 1, or 2 converting fp8 K/V for a decode block (below)
  int m_tiles;              // m16 row tiles per consumer warp
  bool q_in_registers;      // mma.sync: Q's fragments stay in registers across key tiles
  int smem_row_stride;      // elements per padded shared row (mma.sync tiles, epilogue staging)
  int dv;                   // D of v and o: head_dim_v, or head_dim
  unsigned q_tile_bytes;    // the Q tile in shared memory
  unsigned kv_tile_bytes;   // one K tile (and V tile where dv is D): one stage of the pipeline
  unsigned v_tile_bytes;    // one V tile
  unsigned staging_offset;  // wgmma with fp8 K/V: the ring of raw fp8 tiles the producer converts
  int raw_stages;           // ... of this many tiles (K and V each): stages (a deeper raw ring
                            // did not pay on the H200's fp8 decode: the conversion bounds it)
  unsigned barrier_offset;  // wgmma: the mbarrier ring, from the 1024-byte aligned tiles
  unsigned smem_bytes;      // dynamic shared memory per block
  int tma_chunk;            // swizzle chunk of D (elements) = the TMA box's width
  int swizzle_bytes;        // bytes of one swizzled row: 2 * tma_chunk
  int tma_box_rows;         // rows of a TMA box (one head): block_n
  unsigned tma_box_bytes;   // one box, tma_box_rows x swizzle_bytes
  // The V tile in shared memory as blocks of this many key rows, one after
  // the other, each laid out as a whole tile of that many rows is (its
  // swizzle chunks one after the other): block_n (one block, the layout
  // of every other tile), or 16 with small_pages on the warpgroup path of
  // a paged cache where D spans two or more swizzle chunks of 32, 64 or
  // 128 bytes (D 96, 128, 192, 256; not with fp8 K/V, whose producer
  // converts into the usual layout, nor in the decode block). Then a page
  // of 16 keys is one TMA box of 16 rows x D instead of D / tma_chunk
  // boxes (smem_sm90.cuh, BlockedRows; kv_source.cuh, PagedKV).
  int v_block_rows;
  // Producer warps that issue the TMA copies of K and V: 1 (one warp
  // copies both), or 2 where the tuning asks for it on the warpgroup path
  // without fp8 K/V or the decode block: the first warp copies K, the
  // second V (mainloop_sm90.cuh, Producer).
  int producer_warps;
  // Registers per thread: the launch bound's share, and those of the
  // producer and consumer warpgroups after setmaxnreg when rebalancing
  // (the launch share otherwise; producer 0 on the mma.sync path).
  int launch_registers, producer_registers, consumer_registers;
  bool rebalance;
  // Blocks of this variant one SM holds: min_blocks, or fewer where the
  // shared memory (dynamic, the split epilogue's static flag, the
  // driver's reserve) does not fit that many. The launch bound and the
  // register shares use it: asking for blocks that cannot be resident
  // only takes registers away.
  int blocks_per_sm;
  // wgmma with split-KV at D 64 or 128 (swapped also 256, 384, 512),
  // tuning param decode_mma 1 or 2 (a
  // decode block, decode_sm90.cuh): no warpgroup MMAs, and with fp8 K/V no
  // converting producer. One producer warp copies the K/V tiles by TMA
  // (fp8: raw and swizzled, tma_chunk and swizzle_bytes counting bytes
  // then) into a ring of raw_stages stages; each consumer warp takes its
  // MMA fragments by ldmatrix (fp8: converted in registers, m16n8k16 in
  // fp16, exact for e4m3) and walks its share of the key tiles with the
  // rows of its group, the warps' parts combined through shared memory at
  // the end. The H200 profile of the converting producer (64 x 8k D128
  // paged): consumers waiting for converted K, converters waiting at their
  // own barrier, slower than bf16 for half the bytes
  // (bench/results/2026-12-01-h200-91ec9f4-ncu-decode-attnjit_paged_fp8.txt).
  bool mma_decode;
  // decode_mma 2: the decode block with its products swapped (keys and D
  // as the MMAs' M, each row group's <= 8 rows as N; DecodeSwapLayout).
  bool mma_decode_swap;
  // decode_mma asked for on a variant the decode block serves, with a
  // block_m it cannot take (decode_mma 1: 16 x warps; 2: 8): a compile
  // error that says so (prefill.cuh), not the warpgroup path's.
  bool decode_rows_mismatch;
};

// The most dynamic shared memory a block may take on sm_90: the SM's less
// the driver's reserve (227 KiB).
constexpr unsigned kMaxSmemPerBlockSm90 = unsigned(smem_per_sm(90) - kReservedSmemPerBlock);
static_assert(kMaxSmemPerBlockSm90 == 227 * 1024, "sm_90's block limit");

// Rows of a paged TMA box: the greatest common divisor of the key tile and
// the page size (both multiples of 16), so that every box of a tile starts
// and ends inside one page, whatever the two sizes (a tile of 128 keys over
// pages of 192 is two boxes of 64 rows).
ATTNJIT_TILE_CONSTEXPR int paged_box_rows(int block_n, int page_size) {
  if ((block_n & (block_n - 1)) == 0) {
    // A power of two (every paged rule's): the page size's lowest set bit,
    // at most block_n; no division on the producer's path.
    const int low = page_size & -page_size;
    return low < block_n ? low : block_n;
  }
  int a = page_size, b = block_n;
  while (b != 0) {
    const int r = a % b;
    a = b;
    b = r;
  }
  return a;
}

// Warpgroup MMAs read tiles in column chunks of the widest hardware swizzle
// that divides D: 64, 32 or 16 elements (128, 64 or 32-byte rows).
ATTNJIT_TILE_CONSTEXPR int swizzle_chunk(int head_dim) {
  return head_dim % 64 == 0 ? 64 : head_dim % 32 == 0 ? 32 : 16;
}

// The warpgroups that split one row slice's D (TileConfig::d_split): two
// past 256 columns, where D / 2 must be whole swizzle chunks (384, 512).
ATTNJIT_TILE_CONSTEXPR int d_split_for(int head_dim) { return head_dim > 256 ? 2 : 1; }

// The widest head the warpgroup path takes, and mma.sync's (one warp
// holds 16 rows x D of output accumulators: D / 2 registers per thread).
constexpr int kMaxHeadDimWgmma = 512;
constexpr int kMaxHeadDimMmaSync = 256;

// d_split 2: the bytes of the partial-score buffers, [tile parity][warpgroup]
// of 64 rows x block_n fp32 (mainloop_sm90.cuh, Consumer::exchange_scores).
ATTNJIT_TILE_CONSTEXPR unsigned score_exchange_bytes(int d_split, int block_n) {
  return d_split > 1 ? unsigned(2 * d_split * 64 * block_n * 4) : 0u;
}

// fp8 K/V on the warpgroup path: the raw tile's rows arrive by TMA in
// boxes at most 256 bytes wide (the TMA's limit per box dimension), so a
// row wider than that is staged in column chunks of 256 bytes, chunk after
// chunk, each [rows][256] (kv_source.cuh, Fp8Tiles::raw_offset).
ATTNJIT_TILE_CONSTEXPR int fp8_raw_chunk(int head_dim) { return head_dim > 256 ? 256 : head_dim; }

// mma.sync's shared rows are padded by 16 bytes, which makes every ldmatrix
// phase hit 8 distinct 16-byte bank groups for all supported head dims.
ATTNJIT_TILE_CONSTEXPR int padded_row_stride(int head_dim) { return head_dim + 8; }

// mma_decode: the bytes of one consumer warp's part in shared memory
// (decode_sm90.cuh): 4 x 32 floats of row state, 16 rows of D + 4 floats.
ATTNJIT_TILE_CONSTEXPR unsigned decode_part_bytes(int head_dim) {
  return unsigned(4 * (4 * 32 + 16 * (head_dim + 4)));
}
// mma_decode: the columns of O one pass of the combine and epilogue holds
// in registers (16 rows of them per warp: D / 2 floats per thread would
// not fit past D 128); past 128 the passes stage their 16-bit rows apart
// from the parts (each warp a region of 16 padded rows), which the
// combine's later passes still read.
ATTNJIT_TILE_CONSTEXPR int decode_out_slice(int head_dim) {
  return head_dim > 128 ? 128 : head_dim;
}
ATTNJIT_TILE_CONSTEXPR unsigned decode_stage_bytes(int head_dim) {
  return head_dim > 128 ? unsigned(16 * padded_row_stride(head_dim) * 2) : 0u;
}

namespace tile_detail {

// mma.sync: Q, then a ring of `stages` K tiles and one of V tiles, all in
// padded rows. wgmma: 1024 bytes of slack to align the swizzled tiles (Q,
// the K ring, the V ring); the epilogue stages each warp's 16 output rows
// (padded) over them; with fp8 K/V a ring of the raw fp8 K and V tiles
// (rows of D bytes) follows, which the producer converts into the K and V
// rings; the mbarriers follow: full and empty, for K and for V, per stage
// (fp8: and one per stage for the raw tiles' TMA copies).
ATTNJIT_TILE_CONSTEXPR void set_shared_memory(TileConfig& c) {
  const TileShape& s = c.shape;
  if (c.mma_decode) {
    // The raw ring (K then V per stage, block_n rows of D bytes each) and
    // each consumer warp's rows of Q, and over them at the end its part: its lanes' row max and
    // sum, then its 16 output rows (fp32, rows of D + 4); the mbarriers
    // past both: "staged" and "empty" per stage.
    c.q_tile_bytes = unsigned(16 * s.head_dim * 2);  // per consumer warp, fp16, past the ring
    c.kv_tile_bytes = unsigned(s.block_n * s.head_dim * (s.kv_fp8 ? 1 : 2));
    c.v_tile_bytes = c.kv_tile_bytes;
    c.staging_offset = 0;
    const unsigned ring =
        2u * unsigned(c.raw_stages) * c.kv_tile_bytes + unsigned(s.warps) * c.q_tile_bytes;
    const unsigned parts =
        unsigned(s.warps) * (decode_part_bytes(s.head_dim) + decode_stage_bytes(s.head_dim));
    c.barrier_offset = ring > parts ? ring : parts;
    c.smem_bytes = 1024u + c.barrier_offset + unsigned(2 * c.raw_stages * 8);
    return;
  }
  const int row_bytes = s.wgmma ? s.head_dim * 2 : c.smem_row_stride * 2;
  c.q_tile_bytes = unsigned(s.block_m * row_bytes);
  c.kv_tile_bytes = unsigned(s.block_n * row_bytes);
  c.v_tile_bytes = s.wgmma ? unsigned(s.block_n * c.dv * 2) : c.kv_tile_bytes;
  const unsigned tiles =
      c.q_tile_bytes + unsigned(s.stages) * (c.kv_tile_bytes + c.v_tile_bytes);
  if (!s.wgmma) {
    c.staging_offset = 0;
    c.raw_stages = 0;
    c.barrier_offset = 0;
    c.smem_bytes = tiles;
    return;
  }
  const unsigned staged_output = unsigned(s.block_m * padded_row_stride(c.dv) * 2);
  c.staging_offset = tiles;
  const unsigned staging = 2u * unsigned(c.raw_stages * s.block_n * s.head_dim);
  c.exchange_offset = tiles + staging;
  const unsigned used = c.exchange_offset + score_exchange_bytes(c.d_split, s.block_n);
  c.barrier_offset = used > staged_output ? used : staged_output;
  c.smem_bytes = 1024u + c.barrier_offset + unsigned((4 * s.stages + c.raw_stages) * 8);
}

// Every warpgroup starts with the launch bound's share; on the wgmma path
// the producer needs few, so it gives them back (setmaxnreg) and the
// consumers take them, as far as the block's pool allows. A register file
// quarter (16K) holds one warp of each warpgroup of each block. A register
// cap (--maxrregcount) makes the launch share unknown to the kernel: no
// rebalancing then (setmaxnreg.inc past the block's pool would wait
// forever).
ATTNJIT_TILE_CONSTEXPR void set_registers(TileConfig& c) {
  const TileShape& s = c.shape;
  // Each of the SM's four schedulers has a quarter of the register file
  // and its share of the resident warps: a 5-warp block (mma_decode) twice
  // per SM puts 3 warps on some quarter, so 168 registers, not 200.
  const int warps = (c.threads + 31) / 32 * c.blocks_per_sm;
  const int share = 16384 / (32 * ((warps + 3) / 4)) / 8 * 8;
  c.launch_registers = share > 255 ? 255 : share;
  // (mma_decode: one producer warp, not a warpgroup: setmaxnreg works on
  // warpgroups, so every warp keeps the launch share.)
  c.rebalance = s.wgmma && !c.mma_decode && !s.register_cap && c.launch_registers < 232;
  c.producer_registers = s.wgmma ? c.launch_registers : 0;
  c.consumer_registers = c.launch_registers;
  if (!c.rebalance) return;
  const int wg = c.warpgroups, pwg = c.producer_warpgroups;
  // fp8 K/V: the whole producer warpgroup converts tiles and needs more.
  c.producer_registers = s.kv_fp8 ? 64 : wg == 1 ? 40 : wg == 2 ? 24 : 32;
  const int consumer =
      ((wg + pwg) * c.launch_registers - pwg * c.producer_registers) / wg / 8 * 8;
  c.consumer_registers = consumer > 256 ? 256 : consumer;
}

// fp8 K/V decode (split-KV, one consumer warpgroup): the conversion, not
// the copy, bounds the block (on the H200, a raw ring of 7 tiles ran no
// faster than one of 2), and the consumers of a few packed rows need few
// registers: a second producer warpgroup converts too, where the
// consumers keep kDecodeConsumerRegisters and the launch share stays
// above what ptxas needs for the wgmma of O (D / 2 accumulators and about
// 30 more: D 128 asks for 94, so its two blocks per SM keep one producer).
constexpr int kDecodeConsumerRegisters = 112;
ATTNJIT_TILE_CONSTEXPR void set_threads(TileConfig& c, int producer_warpgroups) {
  c.producer_warpgroups = c.shape.wgmma ? producer_warpgroups : 0;
  c.threads = c.consumer_threads + 128 * c.producer_warpgroups;
}

// Blocks per SM (TileConfig::blocks_per_sm). The split epilogue's
// `__shared__` flag is static shared memory, padded to the dynamic
// window's alignment (1024 bytes on the wgmma path, 128 on mma.sync).
ATTNJIT_TILE_CONSTEXPR void set_blocks_per_sm(TileConfig& c) {
  const TileShape& s = c.shape;
  c.blocks_per_sm = s.min_blocks < 1 ? 1 : s.min_blocks;
  if (s.smem_per_sm <= 0) return;
  const int static_smem = s.split_kv ? (s.wgmma ? 1024 : 128) : 0;
  const int per_block = int(c.smem_bytes) + static_smem + kReservedSmemPerBlock;
  const int fit = s.smem_per_sm / per_block;
  if (fit < c.blocks_per_sm) c.blocks_per_sm = fit < 1 ? 1 : fit;
}

}  // namespace tile_detail

// The rows of one of the decode block's row groups (decode_sm90.cuh): a
// warp's m16 tile, or swapped (decode_mma 2) an n8 block.
ATTNJIT_TILE_CONSTEXPR int decode_group_rows(bool swap) { return swap ? 8 : 16; }

ATTNJIT_TILE_CONSTEXPR TileConfig make_tile_config(const TileShape& shape) {
  TileConfig c{};
  c.shape = shape;
  c.consumer_threads = shape.warps * 32;
  c.warpgroups = shape.wgmma ? shape.warps / 4 : 0;
  c.d_split = shape.wgmma ? d_split_for(shape.head_dim) : 1;
  c.dv = shape.head_dim_v > 0 ? shape.head_dim_v : shape.head_dim;
  // (4 or 8 warps of 16 rows each: the phases, warps / groups of rows,
  // then divide the ring's stages for every group count; decode_sm90.cuh.)
  // (Swapped, decode_mma 2: row groups of 8, at most one per warp, so
  // block_m 8 .. 8 x warps; block_m 8 makes every warp a phase.)
  const int group_rows = decode_group_rows(shape.decode_swap);
  const bool decode_rows_fit = shape.decode_swap ? shape.block_m % group_rows == 0 &&
                                                       shape.block_m >= group_rows &&
                                                       shape.block_m <= group_rows * shape.warps
                                                 : shape.block_m == group_rows * shape.warps;
  // Where the decode block serves a variant that asks for it, whose rows
  // then must fit it.
  // (Past D 128 swapped only: its O^T holds D / 4 floats per thread for 8
  // rows, where the standard block's O would hold D / 2.)
  const bool decode_dims = shape.head_dim == 64 || shape.head_dim == 128 ||
                           (shape.decode_swap && (shape.head_dim == 256 ||
                                                  shape.head_dim == 384 || shape.head_dim == 512));
  const bool decode_serves = shape.decode_mma && shape.wgmma && shape.split_kv && decode_dims &&
                             (shape.warps == 4 || shape.warps == 8);
  c.decode_rows_mismatch = decode_serves && !decode_rows_fit;
  c.mma_decode = decode_serves && decode_rows_fit;
  c.mma_decode_swap = c.mma_decode && shape.decode_swap;
  tile_detail::set_threads(c, 1);
  if (c.mma_decode) {
    c.producer_warpgroups = 0;
    c.threads = c.consumer_threads + 32;  // the consumer warps and one producer warp
  }
  // Each warp owns 16 rows per m-tile; with two m-tiles (mma.sync) every K
  // and V fragment read from shared memory feeds two MMAs. Q fragments stay
  // in registers while they fit the budget, else they are re-read from
  // shared memory for each key tile (wgmma reads Q through descriptors).
  c.m_tiles = shape.block_m / (16 * shape.warps);
  c.q_in_registers = !shape.wgmma && shape.head_dim * c.m_tiles <= 128;
  c.smem_row_stride = padded_row_stride(shape.head_dim);
  c.tma_chunk = swizzle_chunk(shape.head_dim);
  c.swizzle_bytes = 2 * c.tma_chunk;
  c.tma_box_rows = shape.block_n;
  c.raw_stages = shape.wgmma && shape.kv_fp8 ? shape.stages : 0;
  if (c.mma_decode) {
    // The ring's stages a multiple of the consumer warps (decode_sm90.cuh:
    // a warp that skips tiles waits on a stage it used last); e4m3 rows of
    // D bytes in boxes one swizzled row wide (64 or 128 bytes: a row of D
    // 512 is four boxes, DecodeLayout::kRawSwizzle).
    c.raw_stages = (shape.stages + shape.warps - 1) / shape.warps * shape.warps;
    if (shape.kv_fp8) {
      c.tma_chunk = 2 * swizzle_chunk(shape.head_dim / 2);
      c.swizzle_bytes = c.tma_chunk;
    }
  }
  c.tma_box_bytes = unsigned(shape.block_n * c.swizzle_bytes);
  constexpr int kSmallPageRows = 16;
  const bool small_pages = shape.small_pages && shape.wgmma && !shape.kv_fp8 && !c.mma_decode &&
                           c.dv % 32 == 0 && c.dv / swizzle_chunk(c.dv) >= 2 &&
                           shape.block_n > kSmallPageRows;
  c.v_block_rows = small_pages ? kSmallPageRows : shape.block_n;
  c.producer_warps =
      shape.producer_warps == 2 && shape.wgmma && !shape.kv_fp8 && !c.mma_decode ? 2 : 1;
  tile_detail::set_shared_memory(c);
  tile_detail::set_blocks_per_sm(c);
  tile_detail::set_registers(c);
  if (shape.wgmma && shape.kv_fp8 && shape.split_kv && c.warpgroups == 1 && !c.mma_decode) {
    TileConfig two = c;
    tile_detail::set_threads(two, 2);
    tile_detail::set_registers(two);
    if (two.rebalance && two.consumer_registers >= tile_detail::kDecodeConsumerRegisters &&
        two.launch_registers >= shape.head_dim / 2 + 32) {
      c = two;
    }
  }
  return c;
}

// The launch grid: x query tiles of block_m (packed) rows over the longest
// sequence, y heads (kv heads when packing GQA: a block holds the Hq / Hkv
// query heads of one, else query heads), z sequences. The kernels' tile scheduler maps
// each block back to its rows.
struct GridShape {
  unsigned x, y, z;
};

// With split-KV (num_splits > 1), x also counts the splits of each query
// tile: block x is split x % num_splits of query tile x / num_splits (from
// the last), so every tile of every sequence may have its keys split (the
// decode block's 8-row tiles put a GQA-16 head, or two queries of GQA 8, in
// two tiles).
ATTNJIT_TILE_CONSTEXPR GridShape grid_shape(const TileConfig& tile, long long max_seqlen_q,
                                            int heads_q, int heads_kv, int num_seqs,
                                            int num_splits = 1) {
  const bool pack = tile.shape.pack_gqa != 0;
  const long long group = pack ? heads_q / heads_kv : 1;
  const long long block_m = tile.shape.block_m;
  const long long m_tiles = (max_seqlen_q * group + block_m - 1) / block_m;
  const long long x = num_splits > 1 ? m_tiles * num_splits : m_tiles;
  return GridShape{unsigned(x), unsigned(pack ? heads_kv : heads_q), unsigned(num_seqs)};
}

// Split-KV: the counters a launch of grid (x, y, z) with num_splits > 1
// needs, one per (query tile, sequence, head slot) (tile_scheduler.cuh's
// split_counter; x holds num_splits cells per tile).
ATTNJIT_TILE_CONSTEXPR long long split_counter_count(unsigned x, unsigned y, unsigned z,
                                                     int num_splits) {
  return static_cast<long long>(x / static_cast<unsigned>(num_splits)) * y * z;
}

// Split-KV: the key tiles [first, last] of a query tile divided
// into `parts` contiguous runs of `per` tiles (the last may be shorter),
// at most num_splits of them and none under min_tiles (the spec's
// split_keys in tiles), so that a short sequence of a batch is not cut
// into slivers. No visible key: one part. The scheduler and the combine
// both use this rule; the host's split count is its num_splits.
struct KeySplit {
  int per;    // tiles per part
  int parts;  // parts with at least one tile (1 when there is none)
};

ATTNJIT_TILE_CONSTEXPR KeySplit split_keys(int first_tile, int last_tile, int num_splits,
                                           int min_tiles) {
  const int count = last_tile - first_tile + 1;
  if (count <= 0 || num_splits <= 1) return KeySplit{count > 0 ? count : 1, 1};
  int per = (count + num_splits - 1) / num_splits;
  if (per < min_tiles) per = min_tiles;
  return KeySplit{per, (count + per - 1) / per};
}

// The tile shape of a variant, field by field, from anything that names
// them: a generated Config's members (tile_config below) or the host's
// values of a signature (runtime/src/variant.cpp, tile_config_of).
template <class P>
ATTNJIT_TILE_CONSTEXPR TileShape tile_shape_of(const P& p) {
  TileShape s{};
  s.head_dim = p.head_dim;
  s.block_m = p.block_m;
  s.block_n = p.block_n;
  s.warps = p.warps;
  s.stages = p.stages;
  s.min_blocks = p.min_blocks;
  s.pack_gqa = p.pack_gqa;
  s.wgmma = p.wgmma != 0;
  s.register_cap = p.register_cap;
  s.kv_fp8 = p.kv_fp8;
  s.split_kv = p.split_kv;
  s.smem_per_sm = p.smem_per_sm;
  s.decode_mma = p.decode_mma != 0;
  s.decode_swap = p.decode_mma == 2;
  s.small_pages = p.small_pages;
  s.producer_warps = p.producer_warps;
  s.head_dim_v = p.head_dim_v;
  return s;
}

// A generated Config's values under the names tile_shape_of reads.
template <class C>
struct ConfigShape {
  static constexpr int head_dim = C::head_dim, block_m = C::block_m, block_n = C::block_n;
  static constexpr int warps = C::warps, stages = C::stages, min_blocks = C::min_blocks;
  static constexpr int pack_gqa = C::pack_gqa, wgmma = C::wgmma;
  static constexpr bool kv_fp8 = C::kv_dtype == C::kv_dtype_t::fp8_e4m3;
  static constexpr bool split_kv = C::split_kv, small_pages = C::small_pages;
  static constexpr int decode_mma = C::decode_mma, producer_warps = C::producer_warps;
  static constexpr int head_dim_v = C::head_dim_v;
#if defined(ATTNJIT_MAX_REGISTERS)
  static constexpr bool register_cap = true;
#else
  static constexpr bool register_cap = false;
#endif
#if defined(__CUDA_ARCH__)
  static constexpr int smem_per_sm = attention::smem_per_sm(__CUDA_ARCH__ / 10);
#else
  static constexpr int smem_per_sm = 0;  // compiled for the host: the caller's shape says
#endif
};

// D of v and o for a generated Config: head_dim_v, or head_dim (0).
template <class C>
ATTNJIT_TILE_CONSTEXPR int value_dim() {
  return C::head_dim_v > 0 ? C::head_dim_v : C::head_dim;
}

// The device side: a generated Config's configuration, from its tuning
// params and the register cap the compile options announce
// (ATTNJIT_MAX_REGISTERS is defined when one is set).
template <class C>
ATTNJIT_TILE_CONSTEXPR TileConfig tile_config() {
  return make_tile_config(tile_shape_of(ConfigShape<C>{}));
}

}  // namespace attention
}  // namespace attnjit

#undef ATTNJIT_TILE_CONSTEXPR
