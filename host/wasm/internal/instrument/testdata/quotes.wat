;; The benchmark's tight loop: counts '"' bytes in [p, p+n).
(module
  (memory (export "memory") 1)
  (func (export "count") (param $p i32) (param $n i32) (result i32)
    (local $end i32) (local $c i32)
    (local.set $end (i32.add (local.get $p) (local.get $n)))
    (block $done
      (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
      (loop $l
        (local.set $c (i32.add (local.get $c)
          (i32.eq (i32.load8_u (local.get $p)) (i32.const 34))))
        (br_if $l (i32.lt_u
          (local.tee $p (i32.add (local.get $p) (i32.const 1)))
          (local.get $end)))))
    (local.get $c)))
