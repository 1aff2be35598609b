;; Post-MVP instructions: bulk memory, SIMD, reference types, sign extension,
;; saturating truncation and tail calls. Constants deliberately contain 0x03
;; (loop) and 0x0b (end) bytes.
(module
  (memory (export "memory") 1)
  (type $ret (func (result i32)))
  (data $d "hello, world")
  (table $t 4 funcref)
  (table $e 2 externref)
  (elem $el func $one $two)
  (elem declare func $three)
  (func $one (result i32) (i32.const 1))
  (func $two (result i32) (i32.const 2))
  (func $three (result i32) (i32.const 3))

  (func (export "bulk") (result i32)
    (local $i i32) (local $s i32)
    (memory.init $d (i32.const 100) (i32.const 0) (i32.const 12))
    (memory.copy (i32.const 200) (i32.const 100) (i32.const 12))
    (memory.fill (i32.const 212) (i32.const 3) (i32.const 4))
    (data.drop $d)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (i32.const 16)))
        (local.set $s (i32.add (local.get $s) (i32.load8_u offset=200 (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $s))

  (func (export "simd") (result i32)
    (local $v v128)
    (v128.store (i32.const 300) (v128.const i32x4 1 2 3 4))
    (local.set $v (v128.load (i32.const 300)))
    (local.set $v (i32x4.add (local.get $v) (v128.const i32x4 10 20 30 40)))
    (local.set $v (i8x16.shuffle 4 5 6 7 0 1 2 3 12 13 14 15 8 9 10 11 (local.get $v) (local.get $v)))
    (local.set $v (v128.load32_lane 3 (i32.const 300) (local.get $v)))
    (v128.store32_lane 0 (i32.const 320) (local.get $v))
    (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $v)) (i32x4.extract_lane 3 (local.get $v)))
      (i32.add (i32.load (i32.const 320))
        (i32x4.extract_lane 2 (i32x4.replace_lane 2 (local.get $v) (i32.const 100))))))

  ;; Counts bytes equal to 3 in [p, p+16n) sixteen at a time.
  (func (export "simdcount") (param $p i32) (param $n i32) (result i32)
    (local $c i32)
    (block $done
      (loop $l
        (br_if $done (i32.eqz (local.get $n)))
        (local.set $c (i32.add (local.get $c)
          (i32.popcnt (i8x16.bitmask (i8x16.eq (v128.load (local.get $p))
            (v128.const i8x16 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3 3))))))
        (local.set $p (i32.add (local.get $p) (i32.const 16)))
        (local.set $n (i32.sub (local.get $n) (i32.const 1)))
        (br $l)))
    (i32.add (local.get $c)
      (i8x16.extract_lane_u 3 (v128.const i8x16 3 11 2 4 3 11 2 4 3 11 2 4 3 11 2 4))))

  (func (export "refs") (result i32)
    (table.set $t (i32.const 0) (ref.func $three))
    (table.init $t $el (i32.const 1) (i32.const 0) (i32.const 2))
    (elem.drop $el)
    (drop (table.grow $t (ref.null func) (i32.const 2)))
    (table.fill $t (i32.const 4) (ref.null func) (i32.const 2))
    (table.copy $t $t (i32.const 3) (i32.const 2) (i32.const 1))
    (table.set $e (i32.const 1) (ref.null extern))
    (i32.add
      (i32.add (call_indirect $t (type $ret) (i32.const 3)) (table.size $t))
      (i32.add
        (ref.is_null (table.get $t (i32.const 5)))
        (select (result i32) (i32.const 10) (i32.const 20)
          (ref.is_null (table.get $e (i32.const 1)))))))

  (func (export "conv") (result i64)
    (i64.add
      (i64.extend_i32_s (i32.extend8_s (i32.const 0xff)))
      (i64.add
        (i64.extend16_s (i64.const 0x8000))
        (i64.extend_i32_u (i32.trunc_sat_f64_u (f64.const 1e20))))))

  (func $count (param $n i32) (param $acc i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (local.get $acc))
      (else (return_call $count
        (i32.sub (local.get $n) (i32.const 1))
        (i32.add (local.get $acc) (i32.const 2))))))
  (func (export "tail") (param i32) (result i32)
    (return_call $count (local.get 0) (i32.const 0)))
  (func (export "tailindirect") (result i32)
    (table.set $t (i32.const 0) (ref.func $three))
    (return_call_indirect $t (type $ret) (i32.const 0))))
