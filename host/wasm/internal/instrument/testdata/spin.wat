;; Runs forever: only the fuel stops it.
(module
  (memory 1)
  (func (export "spin")
    (loop $l (br $l))))
