// The conformance plugin (host/wasm/testdata/conformance/SPEC.md), built with
// the AssemblyScript SDK. Every text here is compared byte for byte by the
// host's conformance suite.

import {
  Action, Condition, Config, Event, Level, Status,
  action, condition, fail, plugin, setResult, setResultBytes,
  fireEvent, http, kvDelete, kvGetBytes, kvSet, lastStatus, log, now, publish, publishEvent,
} from "../../assembly";

export * from "../../assembly/exports";

plugin("conformance", "1.0.0");

// ---- conditions

class Noop extends Condition {
  when(ev: Event): bool {
    return false;
  }
}

class TempHigh extends Condition {
  when(ev: Event): bool {
    return ev.equals("type", "temperature") && ev.float("data.value") > 20;
  }
}

class FieldEquals extends Condition {
  path: string = "";
  value: string = "";
  configure(cfg: Config): string | null {
    let path = cfg.str("path");
    if (path === null) return cfg.missing("path");
    let value = cfg.str("value");
    if (value === null) return cfg.missing("value");
    this.path = path;
    this.value = value;
    return null;
  }
  when(ev: Event): bool {
    return ev.equals(this.path, this.value);
  }
}

class NumberAbove extends Condition {
  path: string = "";
  above: f64 = 0;
  configure(cfg: Config): string | null {
    let path = cfg.str("path");
    if (path === null) return cfg.missing("path");
    if (!cfg.isNumber("above")) return cfg.missing("above", "a number");
    this.path = path;
    this.above = cfg.float("above");
    return null;
  }
  when(ev: Event): bool {
    if (!ev.isNumber(this.path)) return fail("number_above: " + this.path + " is not a number");
    return ev.float(this.path) > this.above;
  }
}

class NowIsEventTime extends Condition {
  when(ev: Event): bool {
    let t = now();
    log(Level.Info, "now " + t.toString());
    return t == ev.time;
  }
}

class TryPublish extends Condition {
  when(ev: Event): bool {
    let n = publish("conformance.denied", "{}");
    if (n == -Status.Denied) return true;
    return fail("publish returned " + n.toString());
  }
}

class FailWhen extends Condition {
  message: string = "";
  configure(cfg: Config): string | null {
    let m = cfg.str("message");
    if (m === null) return cfg.missing("message");
    this.message = m;
    return null;
  }
  when(ev: Event): bool {
    return fail(this.message);
  }
}

condition("noop", (): Condition => new Noop(), { doc: "never met; the cheapest call" });
condition("temp_high", (): Condition => new TempHigh(), { doc: "type is temperature and data.value > 20" });
condition("field_equals", (): Condition => new FieldEquals(), { example: `{"path":"type","value":"temperature"}` });
condition("number_above", (): Condition => new NumberAbove(), { example: `{"path":"data.value","above":20}` });
condition("now_is_event_time", (): Condition => new NowIsEventTime());
condition("try_publish", (): Condition => new TryPublish(), { needs: ["publish"] });
condition("try_http", (): Condition => new TryHttp(), { needs: ["http"] });
condition("fail_when", (): Condition => new FailWhen(), { example: `{"message":"no"}` });

// ---- actions

class Echo extends Action {
  prefix: string = "";
  configure(cfg: Config): string | null {
    this.prefix = cfg.strOr("prefix", "");
    return null;
  }
  act(ev: Event): void {
    setResult(this.prefix + "topic=" + ev.topic + " rule=" + ev.rule + " step=" + ev.step +
      " run=" + ev.run + " key=" + ev.key + " pass=" + ev.pass.toString() + " time=" + ev.time.toString());
  }
}

class EchoRaw extends Action {
  act(ev: Event): void {
    let b = ev.rawBytes();
    if (b === null) {
      fail("event_raw: status " + (-lastStatus()).toString());
      return;
    }
    setResultBytes(b);
  }
}

class EchoConfig extends Action {
  raw: ArrayBuffer = new ArrayBuffer(0);
  configure(cfg: Config): string | null {
    this.raw = cfg.rawBytes();
    return null;
  }
  act(ev: Event): void {
    setResultBytes(this.raw);
  }
}

class Publish extends Action {
  topic: string = "";
  configure(cfg: Config): string | null {
    let t = cfg.str("topic");
    if (t === null) return cfg.missing("topic", "a string");
    this.topic = t;
    return null;
  }
  act(ev: Event): void {
    let n = publishEvent(this.topic);
    if (n != 0) fail("publish: status " + (-n).toString());
  }
}

class KVRoundtrip extends Action {
  act(ev: Event): void {
    let key = ev.strOr("key", "");
    let value = ev.strOr("value", "");
    let n = kvSet(key, value);
    if (n != 0) {
      fail("kv: set: status " + (-n).toString());
      return;
    }
    let v = kvGetBytes(key);
    if (v === null) {
      fail("kv: get: status " + (-lastStatus()).toString());
      return;
    }
    n = kvDelete(key);
    if (n != 0) {
      fail("kv: delete: status " + (-n).toString());
      return;
    }
    kvGetBytes(key);
    n = lastStatus();
    if (n != -Status.NotFound) {
      fail("kv: get after delete: status " + (-n).toString());
      return;
    }
    setResultBytes(v);
  }
}

class Fire extends Action {
  rule: string = "";
  configure(cfg: Config): string | null {
    let r = cfg.str("rule");
    if (r === null) return cfg.missing("rule");
    this.rule = r;
    return null;
  }
  act(ev: Event): void {
    let id = fireEvent(this.rule);
    if (id === null) {
      fail("fire: status " + (-lastStatus()).toString());
      return;
    }
    setResult(id);
  }
}

class Http extends Action {
  url: string = "";
  configure(cfg: Config): string | null {
    let u = cfg.str("url");
    if (u === null) return cfg.missing("url");
    this.url = u;
    return null;
  }
  act(ev: Event): void {
    let raw = ev.rawBytes();
    let body = raw === null ? "" : String.UTF8.decode(raw);
    let resp = http("POST", this.url, ["Idempotency-Key", ev.key], body);
    if (resp === null) {
      fail("http: status " + (-lastStatus()).toString());
      return;
    }
    let answer = resp.header("x-answer");
    setResult(resp.status.toString() + " " + (answer === null ? "" : answer) + " " + resp.text());
  }
}

class TryHttp extends Condition {
  when(ev: Event): bool {
    let resp = http("GET", "http://conformance.test/", [], "");
    let n = lastStatus();
    if (resp === null && n == -Status.Denied) return true;
    return fail("http returned " + n.toString());
  }
}

class Fail extends Action {
  message: string = "";
  configure(cfg: Config): string | null {
    let m = cfg.str("message");
    if (m === null) return cfg.missing("message");
    this.message = m;
    return null;
  }
  act(ev: Event): void {
    fail(this.message);
  }
}

class Crash extends Action {
  message: string = "";
  configure(cfg: Config): string | null {
    let m = cfg.str("message");
    if (m === null) return cfg.missing("message", "a string");
    this.message = m;
    return null;
  }
  act(ev: Event): void {
    assert(false, this.message);
  }
}

class BigResult extends Action {
  size: i32 = 0;
  configure(cfg: Config): string | null {
    if (!cfg.isInt("size")) return cfg.missing("size", "a whole number");
    let n = cfg.int("size");
    if (n < 0 || n > 0x3FFFFFFF) return "big_result: config \"size\" must be from 0 to 1073741823";
    this.size = <i32>n;
    return null;
  }
  act(ev: Event): void {
    let b = new ArrayBuffer(this.size);
    memory.fill(changetype<usize>(b), 0x78 /* x */, <usize>this.size);
    setResultBytes(b);
  }
}

class Count extends Action {
  path: string = "";
  configure(cfg: Config): string | null {
    let p = cfg.str("path");
    if (p === null) return cfg.missing("path");
    this.path = p;
    return null;
  }
  act(ev: Event): void {
    let n = ev.count(this.path);
    if (n < 0) {
      fail("count: " + this.path + " is not a container");
      return;
    }
    setResult(n.toString());
  }
}

class LogLevels extends Action {
  act(ev: Event): void {
    for (let n = 0; n <= 4; n++) log(<Level>n, "level " + n.toString());
  }
}

class RejectConfig extends Action {
  configure(cfg: Config): string | null {
    return "reject_config: refused";
  }
  act(ev: Event): void {}
}

action("echo", (): Action => new Echo(), { example: `{"prefix":"> "}`, doc: "the call header as text" });
action("echo_raw", (): Action => new EchoRaw(), { doc: "the event's JSON" });
action("echo_config", (): Action => new EchoConfig(), { doc: "the config's JSON" });
action("publish", (): Action => new Publish(), { example: `{"topic":"conformance.out"}`, needs: ["publish"] });
action("kv_roundtrip", (): Action => new KVRoundtrip(), { needs: ["kv"] });
action("fire", (): Action => new Fire(), { example: `{"rule":"other"}`, needs: ["fire"] });
action("http", (): Action => new Http(), { example: `{"url":"http://conformance.test/"}`, needs: ["http"] });
action("fail", (): Action => new Fail(), { example: `{"message":"no"}` });
action("crash", (): Action => new Crash(), { example: `{"message":"sensor on fire"}` });
action("big_result", (): Action => new BigResult(), { example: `{"size":1024}` });
action("count", (): Action => new Count(), { example: `{"path":"tags"}` });
action("log_levels", (): Action => new LogLevels());
action("reject_config", (): Action => new RejectConfig());
