// The exports of ABI v1 (ABI.md §2). AssemblyScript exports only what the
// entry file exports, so a plugin's entry file re-exports this file:
//
//     export * from "@ruled/sdk-assemblyscript/exports";

import "./abort";
import { Scratch, compareUTF8 } from "./utf8";
import { Config, Event } from "./view";
import {
  Handler, Condition, Action, Registration, Info, registry, pluginName, pluginVersion,
  describeDirty, setError, errorText, errorBytes, result, failed, permanent,
  KIND_CONDITION, KIND_ACTION,
} from "./registry";
import { Status } from "./host";
import { collectGarbage } from "./gc";
import { jsonString } from "./json";

// @ts-ignore: decorator
@inline const VERSION: i32 = 1 << 16 | 4;

/** ruled_abi_version: major<<16 | minor of the ABI this SDK implements, 1.4. */
export function ruled_abi_version(): i32 {
  return VERSION;
}

// The exchange buffer: one block of unmanaged memory, grown as needed and
// reused for every input.
const exchange = changetype<Scratch>(memory.data(offsetof<Scratch>()));

// The largest buffer ruled_alloc hands out: TLSF's largest block (just under
// 1 GiB) less the rounding Scratch.ensure adds.
// @ts-ignore: decorator
@inline const ALLOC_MAX: usize = (1 << 30) - 8192;

/** ruled_alloc: a buffer of at least `size` bytes, valid until the next ruled_alloc; 0 when it cannot. */
export function ruled_alloc(size: i32): usize {
  let n = <usize>size;
  if (size < 0 || n > ALLOC_MAX) return 0;
  return exchange.ensure(n < 16 ? 16 : n);
}

// @ts-ignore: decorator
@inline function pack(ptr: usize, len: usize): u64 {
  return <u64>ptr << 32 | <u64>len;
}

// Whether [ptr, ptr+len) lies inside memory.
// @ts-ignore: decorator
@inline function inMemory(ptr: usize, len: usize): bool {
  return <u64>ptr + <u64>len <= (<u64>memory.size() << 16);
}

// ---- describe

let describeDoc: ArrayBuffer | null = null;

function buildDescribe(): string {
  let d = "{\"abi\":" + VERSION.toString();
  if (pluginName.length) d += ",\"name\":" + jsonString(pluginName);
  if (pluginVersion.length) d += ",\"version\":" + jsonString(pluginVersion);
  d += ",\"functions\":[";
  for (let i = 0, n = registry.length; i < n; i++) {
    let r = registry[i];
    let info = r.info;
    if (i) d += ",";
    d += "{\"name\":" + jsonString(r.name);
    d += ",\"kind\":" + (r.kind == KIND_CONDITION ? "\"condition\"" : "\"action\"");
    if (info.doc.length) d += ",\"doc\":" + jsonString(info.doc);
    if (info.example.length) d += ",\"example\":" + jsonString(info.example);
    if (info.schema.length) d += ",\"schema\":" + jsonString(info.schema);
    d += ",\"needs\":[";
    for (let j = 0, m = info.needs.length; j < m; j++) {
      if (j) d += ",";
      d += jsonString(info.needs[j]);
    }
    d += "]}";
  }
  return d + "]}";
}

/** ruled_describe: packed ptr/len of the describe document (JSON). */
export function ruled_describe(): u64 {
  let doc = describeDoc;
  if (doc === null || describeDirty) {
    doc = String.UTF8.encode(buildDescribe());
    describeDoc = doc;
    describeDirty = false;
  }
  return pack(changetype<usize>(doc), <usize>doc.byteLength);
}

// ---- handles

// A handle is (generation << 20) | (slot + 1): a released handle stays
// unknown even after its slot is reused.
// @ts-ignore: decorator
@inline const SLOT_BITS: u32 = 20;
// @ts-ignore: decorator
@inline const SLOT_MASK: u32 = (1 << SLOT_BITS) - 1;

const slots = new Array<Handler | null>();
const gens = new Array<u32>();
const freeSlots = new Array<u32>();

function newHandle(h: Handler): u32 {
  let slot: u32;
  if (freeSlots.length) {
    slot = freeSlots.pop();
    unchecked(slots[slot] = h);
  } else {
    slot = <u32>slots.length;
    if (slot >= SLOT_MASK) return 0;
    slots.push(h);
    gens.push(0);
  }
  return unchecked(gens[slot]) << SLOT_BITS | (slot + 1);
}

// The instance under `handle`, or null.
// @ts-ignore: decorator
@inline function lookup(handle: u32): Handler | null {
  let slot = (handle & SLOT_MASK) - 1; // handle 0 wraps to a slot past the end
  if (slot >= <u32>slots.length || unchecked(gens[slot]) != handle >> SLOT_BITS) return null;
  return unchecked(slots[slot]);
}

/** ruled_release: forgets `handle`; an unknown handle is not an error. */
export function ruled_release(handle: u32): void {
  if (lookup(handle) === null) return;
  let slot = (handle & SLOT_MASK) - 1;
  unchecked(slots[slot] = null);
  unchecked(gens[slot] = (unchecked(gens[slot]) + 1) & (0xFFFFFFFF >> SLOT_BITS));
  freeSlots.push(slot);
}

// ---- configure, when, act

const theConfig = new Config();
const theEvent = new Event();

// @ts-ignore: decorator
@inline function packStatus(s: i32, handle: u32): u64 {
  return <u64><u32>s << 32 | <u64>handle;
}

/** ruled_configure: turns (function name, config view) into a handle; packed status<<32 | handle. */
export function ruled_configure(ptr: usize, len: usize): u64 {
  collectGarbage();
  if (!inMemory(ptr, len) || len < 2) {
    setError("configure: malformed input");
    return packStatus(Status.BadInput, 0);
  }
  let nameLen = <usize>load<u16>(ptr);
  if (<usize>2 + nameLen > len || !theConfig.__reset(ptr + 2 + nameLen, len - 2 - nameLen)) {
    setError("configure: malformed input");
    return packStatus(Status.BadInput, 0);
  }
  let reg: Registration | null = null;
  for (let i = 0, n = registry.length; i < n; i++) {
    let r = unchecked(registry[i]);
    if (compareUTF8(r.name, ptr + 2, nameLen) == 0) {
      reg = r;
      break;
    }
  }
  if (reg === null) {
    setError("unknown function \"" + String.UTF8.decodeUnsafe(ptr + 2, nameLen) + "\"");
    return packStatus(Status.UnknownFunction, 0);
  }
  let inst: Handler;
  if (reg.kind == KIND_CONDITION) inst = reg.condition!();
  else inst = reg.action!();
  inst.__kind = reg.kind;
  theConfig.__fn = reg.name;
  failed = false;
  let refused = inst.configure(theConfig);
  if (refused !== null) setError(refused);
  if (refused !== null || failed) {
    failed = false;
    return packStatus(Status.BadConfig, 0);
  }
  let h = newHandle(inst);
  if (!h) {
    setError("configure: too many handles");
    return packStatus(Status.Error, 0);
  }
  return packStatus(Status.OK, h);
}

function badHandle(handle: u32): i32 {
  setError("no such handle " + handle.toString());
  return Status.BadHandle;
}

function wrongKind(inst: Handler): i32 {
  setError(inst.__kind == KIND_CONDITION ? "handle is a condition, not an action" : "handle is an action, not a condition");
  return Status.UnknownFunction;
}

function badInput(): i32 {
  setError("malformed call input");
  return Status.BadInput;
}

/** ruled_when: evaluates the condition under `handle`: 0 not met, 1 met, else an error status. */
export function ruled_when(handle: u32, ptr: usize, len: usize): i32 {
  collectGarbage();
  let inst = lookup(handle);
  if (inst === null) return badHandle(handle);
  if (inst.__kind != KIND_CONDITION) return wrongKind(inst);
  let ev = theEvent;
  if (!inMemory(ptr, len) || !ev.__call(ptr, len)) return badInput();
  failed = false;
  permanent = false;
  let met = changetype<Condition>(inst).when(ev);
  if (failed) {
    failed = false;
    permanent = false;
    return Status.Error;
  }
  return met ? Status.True : Status.OK;
}

/** ruled_act: runs the action under `handle`: 0 ok, else an error status. */
export function ruled_act(handle: u32, ptr: usize, len: usize): i32 {
  collectGarbage();
  result = null;
  let inst = lookup(handle);
  if (inst === null) return badHandle(handle);
  if (inst.__kind != KIND_ACTION) return wrongKind(inst);
  let ev = theEvent;
  if (!inMemory(ptr, len) || !ev.__call(ptr, len)) return badInput();
  failed = false;
  permanent = false;
  changetype<Action>(inst).act(ev);
  if (failed) {
    failed = false;
    result = null;
    if (permanent) {
      permanent = false;
      return Status.Permanent;
    }
    return Status.Error;
  }
  return Status.OK;
}

/** ruled_result: packed ptr/len of the last successful act's result (len 0: none). */
export function ruled_result(): u64 {
  let r = result;
  if (r === null) return 0;
  return pack(changetype<usize>(r), <usize>r.byteLength);
}

/** ruled_error: packed ptr/len of the UTF-8 text of the last error. */
export function ruled_error(): u64 {
  let b = errorBytes;
  if (b === null) {
    b = String.UTF8.encode(errorText);
    errorBytes = b;
  }
  return pack(changetype<usize>(b), <usize>b.byteLength);
}
