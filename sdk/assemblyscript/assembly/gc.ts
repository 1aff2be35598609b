// Garbage collection between calls, for plugins built with --runtime minimal.
//
// The SDK's builds use --runtime incremental, which collects by itself as the
// program allocates, also in the middle of a call; there collectGarbage() is
// a no-op. A plugin may choose --runtime minimal instead (smaller and about
// 10 ns a call faster, but nothing is freed during a call: see README.md).
// That runtime (TLSF + a two-colour mark & sweep) never collects by itself:
// something must call __collect() where no managed object is referenced only
// from the wasm stack. The start of an export is such a point (the host calls
// in with plain numbers), so every export that runs plugin code starts with
// collectGarbage().
//
// A full collection costs time in proportion to the live objects, so it is
// skipped when nothing was allocated since the last one: most conditions
// allocate nothing. To notice an allocation without changing the runtime, a
// sentinel object is allocated right after each collection. The runtime
// links every new object after the last one it made, so the sentinel's
// "next" link changes exactly when something was allocated after it. This
// reads the object header of rt/tcms.ts, which is why assemblyscript is
// pinned to an exact version.

import { BLOCK_OVERHEAD, TOTAL_OVERHEAD } from "rt/common";

@final class Sentinel {}

let sentinel: Sentinel | null = null;
let sentinelNext: usize = 0;

// @ts-ignore: decorator
@inline function nextOf(obj: Sentinel): usize {
  // The object header (rt/tcms.ts): BLOCK { mmInfo } then nextWithColor.
  return load<usize>(changetype<usize>(obj) - TOTAL_OVERHEAD + BLOCK_OVERHEAD);
}

/** @internal Collects garbage if anything was allocated since the last collection (minimal runtime only). */
export function collectGarbage(): void {
  if (ASC_RUNTIME != 1 /* Runtime.Minimal */) return;
  let s = sentinel;
  if (s !== null && nextOf(s) == sentinelNext) return;
  __collect();
  s = new Sentinel();
  sentinel = s;
  sentinelNext = nextOf(s);
}
