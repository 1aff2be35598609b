// Replacements for the three functions AssemblyScript would import from
// "env", which the host does not provide. The build routes them here with
//
//     --use abort=<this file>/ruledAbort --use trace=<this file>/ruledTrace --use seed=<this file>/ruledSeed
//
// (see asconfig.json and README.md for the exact paths).

import { ruled_log, ruled_now } from "./env";

// A fixed buffer, so that aborting on "out of memory" does not allocate.
// @ts-ignore: decorator
@inline const CAP: usize = 1024;
const buf = memory.data(<i32>CAP);

function put(o: usize, s: string | null, maxUnits: i32): usize {
  if (s === null) return o;
  let n = min(s.length, maxUnits);
  return o + String.UTF8.encodeUnsafe(changetype<usize>(s), n, buf + o);
}

function putText(o: usize, s: string): usize {
  return o + String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, buf + o);
}

function putU32(o: usize, v: u32): usize {
  let digits = 1;
  for (let t = v; t >= 10; t /= 10) digits++;
  let e = o + <usize>digits;
  let p = e;
  do {
    p--;
    store<u8>(buf + p, 0x30 + v % 10);
    v /= 10;
  } while (v);
  return e;
}

/**
 * AssemblyScript's abort (a failed assertion, an index out of range, running
 * out of memory, ...): logs `abort: <message> at <file>:<line>:<col>` at error
 * level through ruled.log, then traps. The host fails the call and replaces
 * the instance.
 */
export function ruledAbort(message: string | null = null, fileName: string | null = null, line: u32 = 0, column: u32 = 0): void {
  // 256 + 96 code units at 3 bytes at most, plus the fixed text and numbers, fit in CAP.
  let o = putText(0, "abort: ");
  o = put(o, message !== null ? message : "(no message)", 256);
  if (fileName !== null) {
    o = putText(o, " at ");
    o = put(o, fileName, 96);
    o = putText(o, ":");
    o = putU32(o, line);
    o = putText(o, ":");
    o = putU32(o, column);
  }
  ruled_log(4, buf, o);
  unreachable();
}

/** AssemblyScript's trace(): logs the message and the values at debug level. */
export function ruledTrace(message: string, n: i32 = 0, a0: f64 = 0, a1: f64 = 0, a2: f64 = 0, a3: f64 = 0, a4: f64 = 0): void {
  let s = message;
  if (n > 0) s += " " + a0.toString();
  if (n > 1) s += ", " + a1.toString();
  if (n > 2) s += ", " + a2.toString();
  if (n > 3) s += ", " + a3.toString();
  if (n > 4) s += ", " + a4.toString();
  let b = String.UTF8.encode(s);
  ruled_log(1, changetype<usize>(b), <usize>b.byteLength);
}

/** The seed of Math.random: now(), so a condition replayed on the same event draws the same numbers. */
export function ruledSeed(): f64 {
  return <f64>ruled_now();
}
