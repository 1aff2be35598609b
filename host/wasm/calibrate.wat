;; calibrate: what a unit of fuel costs on this machine (host/wasm's
;; Runtime measures it at start). Each export runs until its fuel is spent;
;; the host times it. Build: wat2wasm calibrate.wat -o calibrate.wasm
(module
  (memory 2)
  ;; loop: the tightest loop, one unit an iteration.
  (func (export "loop") (local $i i32)
    (loop $l (local.set $i (i32.add (local.get $i) (i32.const 1))) (br $l)))
  ;; calls: a call of an empty function, one unit an entry.
  (func $empty)
  (func (export "calls")
    (loop $l (call $empty) (call $empty) (call $empty) (call $empty) (br $l)))
  ;; frames: calls of a function with 256 locals, zeroed at each entry.
  (func $big (local i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64 i64))
  (func (export "frames")
    (loop $l (call $big) (br $l)))
  ;; fill: memory.fill of 64 KiB, charged by its length.
  (func (export "fill")
    (loop $l (memory.fill (i32.const 0) (i32.const 7) (i32.const 65536)) (br $l)))
  ;; copy: memory.copy of 64 KiB.
  (func (export "copy")
    (loop $l (memory.copy (i32.const 65536) (i32.const 0) (i32.const 65536)) (br $l)))
)
