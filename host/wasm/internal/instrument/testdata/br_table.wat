;; br_table: a switch, and a loop driven by br_table.
(module
  (memory 1)
  (func (export "switch") (param $x i32) (result i32)
    (block $d
      (block $c
        (block $b
          (block $a
            (br_table $a $b $c $d (local.get $x)))
          (return (i32.const 10)))
        (return (i32.const 20)))
      (return (i32.const 30)))
    (i32.const 40))
  ;; Counts Collatz steps from n to 1: br_table on n%2 picks the branch.
  (func (export "collatz") (param $n i32) (result i32)
    (local $steps i32)
    (block $done
      (loop $l
        (br_if $done (i32.le_u (local.get $n) (i32.const 1)))
        (local.set $steps (i32.add (local.get $steps) (i32.const 1)))
        (block $odd
          (block $even
            (br_table $even $odd (i32.rem_u (local.get $n) (i32.const 2))))
          (local.set $n (i32.shr_u (local.get $n) (i32.const 1)))
          (br $l))
        (local.set $n (i32.add (i32.mul (local.get $n) (i32.const 3)) (i32.const 1)))
        (br $l)))
    (local.get $steps)))
