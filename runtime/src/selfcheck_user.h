// The self-check's part for user specs (selfcheck_user.cpp): internal to
// the runtime.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnjit/expr.h"
#include "attnjit/reference.h"
#include "attnjit/selfcheck.h"

namespace attnjit {

// A user spec's part of a check: its spec and its args' values.
struct UserCheck {
  std::shared_ptr<const Spec> spec;
  const std::vector<UserCheckArg>* args;
};

// The reference's user_mask / user_score: the spec's trees evaluated with
// the given values (and the inherited scalars as a launch passes them).
void add_user_expressions(const UserCheck& user, ReferenceProblem& pr);

// Whether the spec declares `name` a float scalar (else an int32 one).
bool user_arg_is_float(const UserCheck& user, const std::string& name);

}  // namespace attnjit
