;; Multi-value: blocks, ifs and loops typed by a type index, with params.
(module
  (memory 1)
  (type $pair (func (param i32 i32) (result i32 i32)))
  (func $swap (param i32 i32) (result i32 i32) (local.get 1) (local.get 0))
  (func (export "mv") (param $a i32) (param $b i32) (result i32)
    (local.get $a)
    (local.get $b)
    (block (type $pair) (param i32 i32) (result i32 i32) (call $swap))
    (if (type $pair) (param i32 i32) (result i32 i32) (i32.gt_u (local.get $a) (i32.const 100))
      (then (call $swap))
      (else))
    (i32.sub))
  (func (export "loopparam") (param $n i32) (result i32)
    i32.const 0
    loop $l (param i32) (result i32)
      local.get $n
      i32.add
      local.get $n
      i32.const 1
      i32.sub
      local.tee $n
      br_if $l
    end)
  (func (export "divmod") (param $a i32) (param $b i32) (result i32 i32)
    (i32.div_u (local.get $a) (local.get $b))
    (i32.rem_u (local.get $a) (local.get $b))))
