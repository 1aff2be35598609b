// The host functions of ABI v1 (1.1: http_request, http_response), imported from module "ruled" (ABI.md §3).
//
// AssemblyScript emits an import only for a declaration the program uses, so a
// plugin that never calls publish does not import it, and the host does not
// ask the operator to grant "publish". Use the wrappers in host.ts.

// @ts-ignore: decorator
@external("ruled", "log")
export declare function ruled_log(level: i32, ptr: usize, len: usize): void;

// @ts-ignore: decorator
@external("ruled", "now")
export declare function ruled_now(): i64;

// @ts-ignore: decorator
@external("ruled", "event_raw")
export declare function ruled_event_raw(ptr: usize, cap: usize): i32;

// @ts-ignore: decorator
@external("ruled", "publish")
export declare function ruled_publish(topicPtr: usize, topicLen: usize, payloadPtr: usize, payloadLen: usize): i32;

// @ts-ignore: decorator
@external("ruled", "kv_get")
export declare function ruled_kv_get(keyPtr: usize, keyLen: usize, bufPtr: usize, bufCap: usize): i32;

// @ts-ignore: decorator
@external("ruled", "kv_set")
export declare function ruled_kv_set(keyPtr: usize, keyLen: usize, valPtr: usize, valLen: usize): i32;

// @ts-ignore: decorator
@external("ruled", "kv_delete")
export declare function ruled_kv_delete(keyPtr: usize, keyLen: usize): i32;

// @ts-ignore: decorator
@external("ruled", "fire")
export declare function ruled_fire(rulePtr: usize, ruleLen: usize, payloadPtr: usize, payloadLen: usize, outPtr: usize, outCap: usize): i32;

// @ts-ignore: decorator
@external("ruled", "http_request")
export declare function ruled_http_request(reqPtr: usize, reqLen: usize): i32;

// @ts-ignore: decorator
@external("ruled", "http_response")
export declare function ruled_http_response(bufPtr: usize, bufCap: usize): i32;
