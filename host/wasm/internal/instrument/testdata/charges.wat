;; charges: what the meter charges for, and the stack bound.
;; Build: go generate (wat2wasm --enable-tail-call --enable-threads)
(module
  (memory 4 8)
  (table 1 funcref)
  (func (export "fill") (param $n i32)
    (memory.fill (i32.const 0) (i32.const 7) (local.get $n)))
  (func (export "copy") (param $n i32)
    (memory.copy (i32.const 65536) (i32.const 0) (local.get $n)))
  (func (export "grow") (param $n i32)
    (drop (memory.grow (local.get $n))))
  (func (export "tgrow") (param $n i32) (result i32)
    (table.grow 0 (ref.null func) (local.get $n)))
  (func $sixtyfour (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64
    i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64
    i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64
    i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64))
  (func (export "locals") (call $sixtyfour))
  ;; depth(n): n frames deep, then back; returns n. Three ways out.
  (func $depth (export "depth") (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (i32.add (call $depth (i32.sub (local.get $n) (i32.const 1))) (i32.const 1)))))
  (func $depthret (export "depthret") (param $n i32) (result i32)
    (if (i32.eqz (local.get $n)) (then (return (i32.const 0))))
    (return (i32.add (call $depthret (i32.sub (local.get $n) (i32.const 1))) (i32.const 1))))
  (func $depthbr (export "depthbr") (param $n i32) (result i32)
    (i32.const 0)
    (br_if 0 (i32.eqz (local.get $n)))
    (drop)
    (br 0 (i32.add (call $depthbr (i32.sub (local.get $n) (i32.const 1))) (i32.const 1))))
  ;; tail(n): n tail calls, no frame kept; returns n.
  (func $tailn (param $n i32) (param $acc i32) (result i32)
    (if (i32.eqz (local.get $n)) (then (return (local.get $acc))))
    (return_call $tailn (i32.sub (local.get $n) (i32.const 1)) (i32.add (local.get $acc) (i32.const 1))))
  (func (export "tail") (param $n i32) (result i32)
    (return_call $tailn (local.get $n) (i32.const 0)))
)
