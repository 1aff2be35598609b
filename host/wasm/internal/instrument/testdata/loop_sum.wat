;; Loops: a counted sum and a nested loop (sum of i*j).
(module
  (memory 1)
  (func (export "sum") (param $n i32) (result i64)
    (local $i i32) (local $s i64)
    block $done
      loop $l
        local.get $i
        local.get $n
        i32.ge_u
        br_if $done
        local.get $s
        local.get $i
        i64.extend_i32_u
        i64.add
        local.set $s
        local.get $i
        i32.const 1
        i32.add
        local.set $i
        br $l
      end
    end
    local.get $s)
  (func (export "nested") (param $n i32) (result i32)
    (local $i i32) (local $j i32) (local $s i32)
    (loop $outer
      (local.set $j (i32.const 0))
      (loop $inner
        (local.set $s (i32.add (local.get $s) (i32.mul (local.get $i) (local.get $j))))
        (local.set $j (i32.add (local.get $j) (i32.const 1)))
        (br_if $inner (i32.lt_u (local.get $j) (local.get $n))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $outer (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $s)))
