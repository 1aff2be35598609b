// The scooter example's own plugin in AssemblyScript: what the example rules
// need beyond the first-party plugins. main.go is the same plugin written
// with the Go SDK; plugin_test.go runs one table through both builds and
// the Go code natively and wants the same answers. The rules and `make run`
// load this one (scooter.wasm, committed; `make plugins-as` rebuilds it):
// 50 KB where the Go build is 2.3 MB, and a fraction of its memory.

import {
  Action, Condition, Config, Event, action, condition, fail, floatText, jsonString,
  kvGet, kvSet, lastStatus, logInfo, plugin, publish, setResult, statusText, Status,
} from "../../../sdk/assemblyscript/assembly";

export * from "../../../sdk/assemblyscript/assembly/exports";

plugin("scooter", "1.0.0");

class MovingWhileLocked extends Condition {
  min: f64 = 3;
  configure(cfg: Config): string | null {
    this.min = cfg.float("min_speed", 3);
    return null;
  }
  when(ev: Event): bool {
    return ev.bool("locked") && ev.float("speed", 0) >= this.min;
  }
}

class Remember extends Action {
  act(ev: Event): void {
    let vehicle = ev.str("vehicle");
    if (vehicle === null || !ev.isNumber("battery")) return;
    let n = kvSet("battery:" + vehicle, floatText(ev.float("battery")));
    if (n < 0) fail("kv_set: " + statusText(n));
  }
}

class LimitSpeed extends Action {
  below: f64 = 20;
  maxSpeed: i64 = 15;
  configure(cfg: Config): string | null {
    this.below = cfg.float("below", 20);
    this.maxSpeed = cfg.int("max_speed", 15);
    return null;
  }
  act(ev: Event): void {
    let vehicle = ev.strOr("vehicle", "");
    let b = kvGet("battery:" + vehicle);
    if (b === null) {
      if (lastStatus() != -Status.NotFound) {
        fail("kv_get: " + statusText(lastStatus()));
        return;
      }
      logInfo("no battery level known for " + vehicle + "; no limit");
      setResult("recovered");
      return;
    }
    let level = parseFloat(b);
    if (level >= this.below) {
      logInfo("battery of " + vehicle + " recovered to " + b + "%; no limit");
      setResult("recovered");
      return;
    }
    let payload = "{\"vehicle\":" + jsonString(vehicle) + ",\"max_speed\":" + this.maxSpeed.toString() +
      ",\"key\":" + jsonString(ev.key) + "}";
    let n = publish("scooter.cmd.limit", payload);
    if (n < 0) {
      fail("publish: " + statusText(n));
      return;
    }
    setResult("limited to " + this.maxSpeed.toString() + " km/h");
  }
}

class Alarm extends Action {
  act(ev: Event): void {
    let payload = "{\"vehicle\":" + jsonString(ev.strOr("vehicle", "")) + ",\"round\":" + (ev.pass + 1).toString() + "}";
    let n = publish("scooter.cmd.alarm", payload);
    if (n < 0) fail("publish: " + statusText(n));
  }
}

condition("moving_while_locked", (): Condition => new MovingWhileLocked(), {
  doc: "a locked scooter moving at min_speed km/h or more",
  example: `{"min_speed":3}`,
});
action("remember", (): Action => new Remember(), {
  doc: "remember the scooter's latest battery level",
  needs: ["kv"],
});
action("limit_speed", (): Action => new LimitSpeed(), {
  doc: "limit the speed if the battery is still below a level",
  example: `{"below":20,"max_speed":15}`,
  needs: ["kv", "publish"],
});
action("alarm", (): Action => new Alarm(), {
  doc: "sound the scooter's alarm",
  needs: ["publish"],
});
