// RUN: ziggurat-opt %s -p convert-cf-to-llvm | filecheck %s

func.func @loop(%n: index) {
  %c0 = arith.constant 0 : index
  cf.br ^head(%c0 : index)
^head(%i: index):
  %p = arith.cmpi slt, %i, %n : index
  cf.cond_br %p, ^body, ^exit
^body:
  cf.br ^head(%i : index)
^exit:
  func.return
}

// CHECK-LABEL: func.func @loop
// CHECK: llvm.br ^{{.*}}(%{{.*}} : i64)
// CHECK: ^{{.*}}(%{{.*}}: i64):
// CHECK: llvm.cond_br %p, ^{{.*}}, ^{{.*}}
// CHECK-NOT: cf.
