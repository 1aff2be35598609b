;; An imported global and defined globals: the fuel global must come after
;; them all (index 3) and leave their indices alone.
(module
  (import "env" "base" (global $base i32))
  (memory 1)
  (global $a (mut i32) (i32.const 20))
  (global $b i64 (i64.const 300))
  (func (export "get") (result i64)
    (global.set $a (i32.add (global.get $a) (i32.const 1)))
    (i64.add (i64.extend_i32_u (i32.add (global.get $base) (global.get $a))) (global.get $b))))
