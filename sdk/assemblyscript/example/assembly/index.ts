// An example plugin: a condition that notices a low battery and an action
// that raises an alert. An author's own plugin imports the SDK by its package
// name instead:
//
//     import { ... } from "@ruled/sdk-assemblyscript";
//     export * from "@ruled/sdk-assemblyscript/exports";

import {
  Action, Condition, Config, Event, action, condition, fail, jsonNumber, jsonString, plugin, publish,
} from "../../assembly";

// The ABI exports: every plugin's entry file has this line.
export * from "../../assembly/exports";

plugin("battery", "1.0.0");

// battery_low: met when the event's number "battery" is below the config's
// "below" (default 20).
class BatteryLow extends Condition {
  below: f64 = 20;

  configure(cfg: Config): string | null {
    if (cfg.has("below")) {
      if (!cfg.isNumber("below")) return cfg.missing("below", "a number");
      this.below = cfg.float("below");
    }
    return null;
  }

  when(ev: Event): bool {
    // float() answers NaN for a missing or non-number field, and NaN < x is false.
    return ev.float("battery") < this.below;
  }
}

// alert: publishes {"vehicle": ..., "battery": ...} to the config's "topic".
class Alert extends Action {
  topic: string = "";

  configure(cfg: Config): string | null {
    let topic = cfg.str("topic");
    if (topic === null) return cfg.missing("topic", "a string");
    this.topic = topic;
    return null;
  }

  act(ev: Event): void {
    let payload = "{\"vehicle\":" + jsonString(ev.strOr("vehicle", "")) +
      ",\"battery\":" + jsonNumber(ev.float("battery")) + "}";
    let n = publish(this.topic, payload);
    if (n != 0) fail("alert: publish to " + this.topic + ": status " + (-n).toString());
  }
}

condition("battery_low", (): Condition => new BatteryLow(), {
  doc: "the event's battery is below a level",
  example: `{"below":20}`,
  schema: `{"type":"object","properties":{"below":{"type":"number","default":20}}}`,
});
action("alert", (): Action => new Alert(), {
  doc: "publish the vehicle and its battery level",
  example: `{"topic":"alerts"}`,
  schema: `{"type":"object","required":["topic"],"properties":{"topic":{"type":"string"}}}`,
  needs: ["publish"],
});
