// RUN: ziggurat-opt %s -p cleanup | filecheck %s
// A named pipeline (compiler/pipelines.py) expands in place, here with passes around it.
// RUN: ziggurat-opt %s -p 'dce,cleanup,cse' --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=EXPAND
// RUN: ziggurat-opt --list-passes | filecheck %s --check-prefix=LIST
// RUN: not ziggurat-opt %s -p 'cleanup{x=1}' 2>&1 | filecheck %s --check-prefix=OPTS

// CHECK:       func.func @f() -> i32 {
// CHECK-NEXT:    %{{.*}} = arith.constant 2 : i32
// CHECK-NEXT:    func.return

// EXPAND:      IR Dump After DeadCodeElimination (dce)
// EXPAND:      IR Dump After Canonicalize (canonicalize)
// EXPAND:      IR Dump After CommonSubexpressionElimination (cse)
// EXPAND:      IR Dump After DeadCodeElimination (dce)
// EXPAND:      IR Dump After CommonSubexpressionElimination (cse)

// LIST:        Passes:
// LIST:          canonicalize
// LIST:        Named pipelines:
// LIST:          cleanup = canonicalize,cse,dce
// LIST:          cpu-default = simplify,fold-batchnorm,fold-constants,transpose-weights,pad-weights,pack-weights,simplify,blocked-layout,winograd,fuse-ops,convert-graph-to-linalg,fold-transposes,fuse-elementwise,bufferize,

// OPTS:        ziggurat-opt: error: named pipeline 'cleanup' takes no options

func.func @f() -> i32 {
  %a = arith.constant 1 : i32
  %b = arith.constant 1 : i32
  %unused = arith.muli %a, %b : i32
  %c = arith.addi %a, %b : i32
  func.return %c : i32
}
