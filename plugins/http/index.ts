// The first-party plugin that calls HTTP endpoints: a webhook, a
// notification service, a device's local API. In AssemblyScript
// (plugins/build/http.wasm; see publish/index.ts).
//
// Action `request`, config:
//
//   url:     the URL, with {{path}} placeholders filled from the trigger
//            event (required; http:// or https://)
//   method:  default POST when there is a body, GET otherwise
//   headers: an object of header names to values, each a template
//   body:    an object (sent as JSON, its strings templated as publish's
//            payload is) or a string (a text template, sent as it is);
//            default: none
//   ok:      the statuses that succeed, e.g. [200, 201, 204]; default:
//            any 2xx
//
// Every request carries the step's idempotency key as Idempotency-Key
// (unless the config sets one): the same for every delivery of one step of
// one pass of one run, so an endpoint that honours it does the effect once
// when the step runs again. A status outside ok fails the step with the
// status and the start of the body; retries are the step's (retry:), not
// the plugin's, and a failure a retry would repeat says so (failPermanent:
// a 4xx other than 408, 425 and 429, a host the operator does not allow, a
// body over its bound), so the step is not tried again. The step's result
// is the response body.
//
// It needs the http capability, and the operator's allow-list of hosts
// (config: plugin: {http: {grant: [http], http: {hosts: [...]}}}).

import {
  Action, Config, Event, Status, Template, ValueKind, action, escapeKey, fail, failPermanent, http, jsonTemplate, lastStatus, plugin,
  setResultBytes, statusText, templateError, textTemplate,
} from "../../sdk/assemblyscript/assembly";

export * from "../../sdk/assemblyscript/assembly/exports";

plugin("http", "1.1.0");

class Request extends Action {
  url: Template | null = null;
  method: string = "";
  names: string[] = [];
  values: Template[] = [];
  body: Template | null = null;
  contentType: string = "";
  ok: i32[] = [];
  keyed: bool = false;

  configure(cfg: Config): string | null {
    let u = cfg.str("url");
    if (u === null) return cfg.missing("url", "a string");
    if (!u.startsWith("http://") && !u.startsWith("https://")) {
      return "http: config \"url\" must start with http:// or https://, not " + quote(u);
    }
    this.url = textTemplate(u);
    if (this.url === null) return "http: url: " + templateError;
    if (cfg.has("body")) {
      let k = cfg.kind("body");
      if (k == ValueKind.Object || k == ValueKind.Array) {
        this.body = jsonTemplate(cfg, "body");
        this.contentType = "application/json";
      } else if (k == ValueKind.String) {
        this.body = textTemplate(cfg.str("body")!);
        this.contentType = "text/plain; charset=utf-8";
      } else {
        return "http: config \"body\" must be an object or a string";
      }
      if (this.body === null) return "http: body: " + templateError;
    }
    this.method = cfg.strOr("method", "").toUpperCase();
    if (this.method.length == 0) this.method = this.body === null ? "GET" : "POST";
    if (cfg.has("headers")) {
      if (cfg.kind("headers") != ValueKind.Object) return "http: config \"headers\" must be an object of names to strings";
      let names = cfg.keys("headers");
      for (let i = 0; i < names.length; i++) {
        let name = names[i];
        let p = "headers." + escapeKey(name);
        let v = cfg.str(p);
        if (v === null || name.length == 0) return "http: header " + quote(name) + " must be a string";
        let t = textTemplate(v);
        if (t === null) return "http: header " + name + ": " + templateError;
        this.names.push(name);
        this.values.push(t);
        if (name.toLowerCase() == "idempotency-key") this.keyed = true;
      }
    }
    if (cfg.has("ok")) {
      let n = cfg.count("ok");
      let good = cfg.kind("ok") == ValueKind.Array && n > 0;
      for (let i = 0; good && i < n; i++) {
        let p = "ok." + i.toString();
        let f = cfg.float(p);
        if (!cfg.isNumber(p) || f < 100 || f > 599) good = false;
        else this.ok.push(<i32>f);
      }
      if (!good) return "http: config \"ok\" must be a list of HTTP statuses, e.g. [200, 204]";
    }
    return null;
  }

  act(ev: Event): void {
    let url = this.url!.render(ev);
    let headers = new Array<string>();
    let typed = false;
    for (let i = 0; i < this.names.length; i++) {
      headers.push(this.names[i]);
      headers.push(this.values[i].render(ev));
      if (this.names[i].toLowerCase() == "content-type") typed = true;
    }
    let key = ev.key;
    if (!this.keyed && key.length > 0) {
      headers.push("Idempotency-Key");
      headers.push(key);
    }
    let body = "";
    if (this.body !== null) {
      body = this.body!.render(ev);
      if (!typed) {
        headers.push("Content-Type");
        headers.push(this.contentType);
      }
    }
    let resp = http(this.method, url, headers, body);
    if (resp === null) {
      let st = lastStatus();
      let text = "http: " + this.method + " " + url + ": http_request: " + statusText(st);
      if (st == -Status.Denied || st == -Status.TooLarge) failPermanent(text);
      else fail(text);
      return;
    }
    let good = this.ok.length == 0 ? resp.status / 100 == 2 : this.ok.includes(resp.status);
    if (!good) {
      let text = "http: " + this.method + " " + url + ": status " + resp.status.toString() + excerpt(resp.body);
      let s = resp.status;
      if (s / 100 == 4 && s != 408 && s != 425 && s != 429) failPermanent(text);
      else fail(text);
      return;
    }
    setResultBytes(resp.body);
  }
}

// Go's strconv.Quote for the ASCII a URL or a header name holds.
function quote(s: string): string {
  return "\"" + s.replaceAll("\\", "\\\\").replaceAll("\"", "\\\"") + "\"";
}

// The start of a response body, for an error: its first 200 bytes with
// runs of white space made one space.
function excerpt(b: ArrayBuffer): string {
  if (b.byteLength == 0) return "";
  let cut = b.byteLength > 200;
  let s = String.UTF8.decode(cut ? b.slice(0, 200) : b) + (cut ? "…" : "");
  let words = new Array<string>();
  let w = "";
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c == 0x20 || (c >= 0x09 && c <= 0x0D)) {
      if (w.length) words.push(w);
      w = "";
    } else {
      w += String.fromCharCode(c);
    }
  }
  if (w.length) words.push(w);
  return ": " + words.join(" ");
}

action("request", (): Action => new Request(), {
  doc: "send an HTTP request (a webhook); URL, headers and body may take values from the trigger",
  example: `{"url":"https://hooks.example.com/notify","body":{"text":"door {{door}} opened"}}`,
  needs: ["http"],
});
