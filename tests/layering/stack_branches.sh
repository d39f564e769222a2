#!/bin/sh
# Nothing outside workloads/stacks/ branches on the training stack (DESIGN.md, "one module per
# stack"): no comparison with a StackKind and no switch over one in the product's sources. The
# rest reads the facts and behaviours of workloads/stacks/stack_model.hpp. Prints what it finds.
cd "$1" || exit 2
hits=$(grep -rnE '(==|!=) *(wl::)?StackKind::|StackKind::[A-Z_]+ *(==|!=|\?)|case +(wl::)?StackKind::' \
  --include='*.cpp' --include='*.hpp' calibrate hwprofiles planner reports sim workloads | grep -v '^workloads/stacks/')
if [ -n "$hits" ]; then
  echo "branches on the training stack outside workloads/stacks/ (read a StackModel fact instead):"
  echo "$hits"
  exit 1
fi
echo "no branch on the training stack outside workloads/stacks/"
