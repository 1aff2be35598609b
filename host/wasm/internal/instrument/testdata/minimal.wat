;; No global, export or code section: Instrument must create the first two.
(module
  (memory 2))
