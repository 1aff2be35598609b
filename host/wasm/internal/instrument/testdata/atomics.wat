;; Atomics on an unshared memory (threads proposal).
(module
  (memory 1 1)
  (func (export "atomics") (result i32)
    (i32.atomic.store (i32.const 400) (i32.const 5))
    (drop (i32.atomic.rmw.add (i32.const 400) (i32.const 7)))
    (atomic.fence)
    (drop (i64.atomic.rmw.cmpxchg offset=8 (i32.const 400) (i64.const 0) (i64.const 3)))
    (i32.add (i32.atomic.load (i32.const 400)) (i32.wrap_i64 (i64.atomic.load offset=8 (i32.const 400))))))
