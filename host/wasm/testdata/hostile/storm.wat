;; storm: actions that loop on a host call forever and never look at its
;; answer (issue 37, 2: host calls cost no fuel, and one such loop held the
;; only worker for over 60 s past a 1 s deadline).
;; Build: wat2wasm storm.wat -o storm.wasm
;; A function's handle is the first byte of its name.
(module
  (import "ruled" "kv_set" (func $kv_set (param i32 i32 i32 i32) (result i32)))
  (import "ruled" "publish" (func $publish (param i32 i32 i32 i32) (result i32)))
  (import "ruled" "fire" (func $fire (param i32 i32 i32 i32 i32 i32) (result i32)))
  (import "ruled" "log" (func $log (param i32 i32 i32)))
  (import "ruled" "now" (func $now (result i64)))
  (memory (export "memory") 2)
  (data (i32.const 16) "{\"abi\":65536,\"name\":\"storm\",\"functions\":[{\"name\":\"kv\",\"kind\":\"action\"},{\"name\":\"publish\",\"kind\":\"action\"},{\"name\":\"fire\",\"kind\":\"action\"},{\"name\":\"log\",\"kind\":\"action\"},{\"name\":\"now\",\"kind\":\"action\"}]}")
  (data (i32.const 8192) "storm")
  (data (i32.const 8208) "{\"n\":1}")
  (data (i32.const 8224) "storm.out")
  (func (export "ruled_abi_version") (result i32) (i32.const 65536))
  (func (export "ruled_describe") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 201)))
  (func (export "ruled_alloc") (param $size i32) (result i32)
    (local $need i32)
    (local.set $need (i32.shr_u (i32.add (i32.add (local.get $size) (i32.const 65536)) (i32.const 65535)) (i32.const 16)))
    (if (i32.gt_u (local.get $need) (memory.size))
      (then (if (i32.eq (memory.grow (i32.sub (local.get $need) (memory.size))) (i32.const -1))
        (then (return (i32.const 0))))))
    (i32.const 65536))
  (func (export "ruled_configure") (param $p i32) (param $n i32) (result i64)
    (i64.extend_i32_u (i32.load8_u (i32.add (local.get $p) (i32.const 2)))))
  (func (export "ruled_release") (param $h i32))
  (func (export "ruled_when") (param $h i32) (param $p i32) (param $n i32) (result i32) (i32.const 0))
  (func (export "ruled_act") (param $h i32) (param $p i32) (param $n i32) (result i32)
    (if (i32.eq (local.get $h) (i32.const 107))                ;; k: kv_set, forever
      (then (loop $l (drop (call $kv_set (i32.const 8192) (i32.const 5) (i32.const 8208) (i32.const 7))) (br $l))))
    (if (i32.eq (local.get $h) (i32.const 112))                ;; p: publish, forever
      (then (loop $l (drop (call $publish (i32.const 8224) (i32.const 9) (i32.const 8208) (i32.const 7))) (br $l))))
    (if (i32.eq (local.get $h) (i32.const 102))                ;; f: fire, forever
      (then (loop $l (drop (call $fire (i32.const 8192) (i32.const 5) (i32.const 8208) (i32.const 7) (i32.const 9000) (i32.const 64))) (br $l))))
    (if (i32.eq (local.get $h) (i32.const 108))                ;; l: log, forever
      (then (loop $l (call $log (i32.const 1) (i32.const 8192) (i32.const 5)) (br $l))))
    (if (i32.eq (local.get $h) (i32.const 110))                ;; n: now, forever
      (then (loop $l (drop (call $now)) (br $l))))
    (i32.const 0))
  (func (export "ruled_result") (result i64) (i64.const 0))
  (func (export "ruled_error") (result i64) (i64.const 0))
)
