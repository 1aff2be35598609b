//! The Rust SDK's templates under test (plugins/tmpl_test.go,
//! TestSDKTemplatesMatchGo): "json" renders its config's "payload" as a
//! JSON template, "text" its "message" as a text template; each result is
//! the rendering.

use ruled::{Call, Config, Template};

fn init() {
    ruled::plugin("tmpltest", "1.0.0");
    ruled::action("json", |cfg: &Config| {
        let t = Template::json(cfg, "payload")?;
        Ok(Box::new(move |c: &Call| Ok(t.render(c))))
    });
    ruled::action("text", |cfg: &Config| {
        let t = Template::text(cfg.require_str("message")?)?;
        Ok(Box::new(move |c: &Call| Ok(t.render(c))))
    });
    // TestConfigurePanicSaysWhy
    ruled::action("crash_configure", |_: &Config| -> Result<ruled::Act, ruled::Error> { panic!("no config for you") });
}

ruled::main!(init);
