// The first-party plugin that puts events on the bus, in AssemblyScript: a
// 20 KB module where its Go build was 2.3 MB (see plugins/doc.go for the
// figures). Built into plugins/build/publish.wasm by
// `make plugins-as`; committed, so `make run` needs no node.
//
// Action `publish`, config:
//
//   topic:   the topic, with {{path}} placeholders filled from the trigger
//            event (required)
//   payload: a JSON object; a string that is exactly "{{path}}" takes the
//            event's value with its type, other strings splice text in.
//            default: the trigger event as it arrived.
//
// Its output is {"topic": the topic it published to}, and it needs the
// publish capability.

import {
  Action, Config, Event, Template, ValueKind, action, fail, jsonString, jsonTemplate, plugin,
  publish, publishEvent, setResult, statusText, templateError, textTemplate,
} from "../../sdk/assemblyscript/assembly";

export * from "../../sdk/assemblyscript/assembly/exports";

plugin("publish", "1.1.0");

class Publish extends Action {
  topic: Template | null = null;
  payload: Template | null = null;

  configure(cfg: Config): string | null {
    let t = cfg.str("topic");
    if (t === null) return cfg.missing("topic", "a string");
    this.topic = textTemplate(t);
    if (this.topic === null) return "publish: topic: " + templateError;
    if (cfg.has("payload")) {
      if (cfg.kind("payload") != ValueKind.Object) return "publish: config \"payload\" must be an object";
      this.payload = jsonTemplate(cfg, "payload");
      if (this.payload === null) return "publish: payload: " + templateError;
    }
    return null;
  }

  act(ev: Event): void {
    let to = this.topic!.render(ev);
    let p = this.payload;
    let n = p === null ? publishEvent(to) : publish(to, p.render(ev));
    if (n < 0) {
      fail("publish to " + to + ": publish: " + statusText(n));
      return;
    }
    setResult("{\"topic\":" + jsonString(to) + "}");
  }
}

action("publish", (): Action => new Publish(), {
  doc: "publish an event to a topic; payload fields may take values from the trigger",
  example: `{"topic":"alerts.battery.{{vehicle}}","payload":{"vehicle":"{{vehicle}}","level":"{{battery}}"}}`,
  schema: `{"type":"object","required":["topic"],"properties":{"topic":{"type":"string"},"payload":{"type":"object"}}}`,
  needs: ["publish"],
});
