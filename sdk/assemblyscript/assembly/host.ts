// Friendly wrappers over the host functions (ABI.md §3). Each one that takes
// strings encodes them into reused scratch memory, so calling it allocates
// nothing unless it returns a new string or buffer.
//
// Host functions answer 0 or a length on success and a negated status on
// failure: publish(...) == -Status.Denied means the capability was not
// granted, or the call is not allowed here (a condition may only log, read
// the time and read the event's JSON).

import {
  ruled_log, ruled_now, ruled_event_raw, ruled_publish,
  ruled_kv_get, ruled_kv_set, ruled_kv_delete, ruled_fire,
  ruled_http_request, ruled_http_response,
} from "./env";
import { hostScratch, encodeInto, decodeUTF8, copyBytes, Scratch } from "./utf8";

/** Log levels for log(). */
export enum Level {
  Trace = 0,
  Debug = 1,
  Info = 2,
  Warn = 3,
  Error = 4,
}

/** Status codes of ABI v1 (ABI.md §6). Host functions answer them negated. */
export enum Status {
  OK = 0,
  True = 1,
  Error = 2,
  BadInput = 3,
  BadConfig = 4,
  UnknownFunction = 5,
  BadHandle = 6,
  Denied = 7,
  NotFound = 8,
  TooLarge = 9,
  Unavailable = 10,
  /** An action's failure a retry would repeat: the step is not retried (ABI 1.2; failPermanent). */
  Permanent = 11,
}

const statusNames: string[] = [
  "ok", "true", "error", "bad input", "bad config", "unknown function",
  "bad handle", "denied", "not found", "too large", "unavailable", "permanent",
];

/**
 * Names a status as the Go SDK's errors do ("denied", "too large"); a host
 * function's negated answer is taken as its status: statusText(-7) is
 * "denied". For an error text such as `publish: denied`.
 */
export function statusText(status: i32): string {
  let s = status < 0 ? -status : status;
  if (s < statusNames.length) return statusNames[s];
  return "status " + s.toString();
}

// The raw answer of the last host function a wrapper called.
let last: i32 = 0;

/**
 * The raw answer of the last host function called through a wrapper that
 * returns a value rather than a status (kvGet, fire, eventRaw): a length
 * (>= 0) on success, a negated Status on failure, e.g. -Status.NotFound.
 */
export function lastStatus(): i32 {
  return last;
}

/** Writes a line to the host's log at `level`. The host cuts lines at 4 KiB. */
export function log(level: Level, message: string): void {
  let n = <usize>String.UTF8.byteLength(message);
  let p = hostScratch.ensure(n);
  ruled_log(level, p, encodeInto(message, p));
}

/** log(Level.Trace, message) */
export function logTrace(message: string): void { log(Level.Trace, message); }
/** log(Level.Debug, message) */
export function logDebug(message: string): void { log(Level.Debug, message); }
/** log(Level.Info, message) */
export function logInfo(message: string): void { log(Level.Info, message); }
/** log(Level.Warn, message) */
export function logWarn(message: string): void { log(Level.Warn, message); }
/** log(Level.Error, message) */
export function logError(message: string): void { log(Level.Error, message); }

/**
 * Unix nanoseconds. In a condition it is the event's time, so that a condition
 * evaluated again on replay decides the same way; in an action it is the
 * host's clock. Use it instead of Date.now(), which would import env.Date.now.
 */
// @ts-ignore: decorator
@inline
export function now(): i64 {
  return ruled_now();
}

// Scratch space for event_raw, kept between calls.
const rawScratch = changetype<Scratch>(memory.data(offsetof<Scratch>()));

// Calls event_raw until the JSON fits in rawScratch; answers its length or a negated status.
function eventRawInto(): i32 {
  let p = rawScratch.ensure(4096);
  let n = ruled_event_raw(p, rawScratch.cap);
  if (n > 0 && <usize>n > rawScratch.cap) {
    p = rawScratch.ensure(<usize>n);
    n = ruled_event_raw(p, rawScratch.cap);
    if (n > 0 && <usize>n > rawScratch.cap) n = -Status.Error; // changed under us
  }
  last = n;
  return n;
}

/**
 * The current event's JSON, byte for byte as the host has it (event_raw).
 * Null when the host refused (see lastStatus()). Allowed in conditions too.
 */
export function eventRawBytes(): ArrayBuffer | null {
  let n = eventRawInto();
  if (n < 0) return null;
  return copyBytes(rawScratch.ptr, <usize>n);
}

/** eventRawBytes() decoded as a string; "" when the host refused. */
export function eventRaw(): string {
  let n = eventRawInto();
  if (n <= 0) return "";
  return decodeUTF8(rawScratch.ptr, <usize>n);
}

/**
 * Publishes the JSON object `payload` ("" for {}) on `topic`. Answers 0 or a
 * negated Status: -Status.Denied without the "publish" grant, in a condition,
 * or for a topic under "ruled.". Needs: "publish".
 */
export function publish(topic: string, payload: string): i32 {
  let tn = <usize>String.UTF8.byteLength(topic);
  let pn = <usize>String.UTF8.byteLength(payload);
  let p = hostScratch.ensure(tn + pn);
  encodeInto(topic, p);
  encodeInto(payload, p + tn);
  return ruled_publish(p, tn, p + tn, pn);
}

/** publish() with a payload of UTF-8 bytes. Needs: "publish". */
export function publishBytes(topic: string, payload: ArrayBuffer): i32 {
  let tn = <usize>String.UTF8.byteLength(topic);
  let p = hostScratch.ensure(tn);
  encodeInto(topic, p);
  return ruled_publish(p, tn, changetype<usize>(payload), <usize>payload.byteLength);
}

/**
 * publish() with the current event's JSON as the payload, without copying
 * it into a string first. Needs: "publish".
 */
export function publishEvent(topic: string): i32 {
  let n = eventRawInto();
  if (n < 0) return n;
  let tn = <usize>String.UTF8.byteLength(topic);
  let p = hostScratch.ensure(tn);
  encodeInto(topic, p);
  return ruled_publish(p, tn, rawScratch.ptr, <usize>n);
}

const valScratch = changetype<Scratch>(memory.data(offsetof<Scratch>()));

/**
 * The value stored under `key` in the plugin's key-value store, or null:
 * lastStatus() is then -Status.NotFound for a missing key, another negated
 * Status for a failure. Needs: "kv".
 */
export function kvGetBytes(key: string): ArrayBuffer | null {
  let kn = <usize>String.UTF8.byteLength(key);
  let kp = hostScratch.ensure(kn);
  encodeInto(key, kp);
  let out = valScratch.ensure(256);
  let n = ruled_kv_get(kp, kn, out, valScratch.cap);
  if (n > 0 && <usize>n > valScratch.cap) { // did not fit: ask again with room
    out = valScratch.ensure(<usize>n);
    n = ruled_kv_get(kp, kn, out, valScratch.cap);
    if (n > 0 && <usize>n > valScratch.cap) n = -Status.Error;
  }
  last = n;
  if (n < 0) return null;
  return copyBytes(valScratch.ptr, <usize>n);
}

/** kvGetBytes() decoded as a string. Needs: "kv". */
export function kvGet(key: string): string | null {
  let b = kvGetBytes(key);
  if (b === null) return null;
  return String.UTF8.decode(b);
}

/** Stores `value` under `key`. Answers 0 or a negated Status (-Status.TooLarge past the quota). Needs: "kv". */
export function kvSet(key: string, value: string): i32 {
  let kn = <usize>String.UTF8.byteLength(key);
  let vn = <usize>String.UTF8.byteLength(value);
  let p = hostScratch.ensure(kn + vn);
  encodeInto(key, p);
  encodeInto(value, p + kn);
  return ruled_kv_set(p, kn, p + kn, vn);
}

/** kvSet() with a value of bytes. Needs: "kv". */
export function kvSetBytes(key: string, value: ArrayBuffer): i32 {
  let kn = <usize>String.UTF8.byteLength(key);
  let p = hostScratch.ensure(kn);
  encodeInto(key, p);
  return ruled_kv_set(p, kn, changetype<usize>(value), <usize>value.byteLength);
}

/** Deletes `key`. Answers 0 or a negated Status. Needs: "kv". */
export function kvDelete(key: string): i32 {
  let kn = <usize>String.UTF8.byteLength(key);
  let p = hostScratch.ensure(kn);
  encodeInto(key, p);
  return ruled_kv_delete(p, kn);
}

/**
 * Starts a run of `rule` with the JSON object `payload` as its trigger event
 * and answers the new run's execution id, or null: lastStatus() then has the
 * negated Status (-Status.NotFound for an unknown rule). Needs: "fire".
 */
export function fire(rule: string, payload: string): string | null {
  let rn = <usize>String.UTF8.byteLength(rule);
  let pn = <usize>String.UTF8.byteLength(payload);
  let p = hostScratch.ensure(rn + pn);
  encodeInto(rule, p);
  encodeInto(payload, p + rn);
  return fireAt(p, rn, p + rn, pn);
}

/** fire() with the current event's JSON as the payload. Needs: "fire". */
export function fireEvent(rule: string): string | null {
  let n = eventRawInto();
  if (n < 0) return null;
  let rn = <usize>String.UTF8.byteLength(rule);
  let p = hostScratch.ensure(rn);
  encodeInto(rule, p);
  return fireAt(p, rn, rawScratch.ptr, <usize>n);
}

function fireAt(rp: usize, rn: usize, pp: usize, pn: usize): string | null {
  let out = valScratch.ensure(1024);
  let n = ruled_fire(rp, rn, pp, pn, out, valScratch.cap);
  if (n > 0 && <usize>n > valScratch.cap) {
    // The run was started but its id (over 1 KiB) was not copied. Asking
    // again would start a second run, so answer an empty id.
    last = n;
    return "";
  }
  last = n;
  if (n < 0) return null;
  return decodeUTF8(valScratch.ptr, <usize>n);
}

/** An outbound HTTP response (http()): any status the server sent, its headers and its whole body. */
export class Response {
  status: i32 = 0;
  /** Header names and values, alternating: [name0, value0, name1, value1, ...]. */
  headers: string[] = [];
  body: ArrayBuffer = new ArrayBuffer(0);

  /** The first value of the header `name`, compared without case; null when there is none. */
  header(name: string): string | null {
    let want = name.toLowerCase();
    for (let i = 0; i + 1 < this.headers.length; i += 2) {
      if (this.headers[i].toLowerCase() == want) return this.headers[i + 1];
    }
    return null;
  }

  /** The body decoded as UTF-8. */
  text(): string {
    return String.UTF8.decode(this.body);
  }
}

const httpScratch = changetype<Scratch>(memory.data(offsetof<Scratch>()));

// @ts-ignore: decorator
@inline
function put32(p: usize, v: u32): usize {
  store<u32>(p, v);
  return p + 4;
}

function putString(p: usize, s: string): usize {
  let n = <usize>String.UTF8.byteLength(s);
  p = put32(p, <u32>n);
  encodeInto(s, p);
  return p + n;
}

/**
 * Sends an HTTP request and answers its response, or null: lastStatus() is
 * then the negated Status — -Status.Denied for a host the operator did not
 * allow the plugin (or in a condition, which may not make requests),
 * -Status.TooLarge for a body over the host's bound, -Status.Unavailable
 * when it was not answered within the step's deadline. `headers` alternate
 * names and values. Actions run at least once: send the Event's key as an
 * Idempotency-Key header to make a repeat harmless. Needs: "http".
 */
export function http(method: string, url: string, headers: string[], body: string): Response | null {
  let n: usize = 16 + <usize>String.UTF8.byteLength(method) + <usize>String.UTF8.byteLength(url) +
    <usize>String.UTF8.byteLength(body);
  for (let i = 0; i < headers.length; i++) n += 4 + <usize>String.UTF8.byteLength(headers[i]);
  let start = hostScratch.ensure(n);
  let p = putString(start, method);
  p = putString(p, url);
  let pairs = headers.length >> 1;
  p = put32(p, <u32>pairs);
  for (let i = 0; i < pairs << 1; i++) p = putString(p, headers[i]);
  p = putString(p, body);
  let r = ruled_http_request(start, p - start);
  last = r;
  if (r < 0) return null;
  let out = httpScratch.ensure(<usize>r);
  let got = ruled_http_response(out, httpScratch.cap);
  if (got != r) {
    last = got < 0 ? got : -Status.Error;
    return null;
  }
  return parseResponse(out, <usize>r);
}

function parseResponse(p: usize, n: usize): Response | null {
  let end = p + n;
  let resp = new Response();
  if (n < 8) { last = -Status.BadInput; return null; }
  resp.status = <i32>load<u32>(p);
  let pairs = load<u32>(p + 4);
  p += 8;
  for (let i: u32 = 0; i < pairs << 1; i++) {
    if (p + 4 > end) { last = -Status.BadInput; return null; }
    let l = <usize>load<u32>(p);
    p += 4;
    if (l > end - p) { last = -Status.BadInput; return null; }
    resp.headers.push(decodeUTF8(p, l));
    p += l;
  }
  resp.body = copyBytes(p, end - p);
  return resp;
}
