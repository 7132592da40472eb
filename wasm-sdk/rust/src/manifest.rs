//! What a component declares when it registers, and the module's
//! manifest made of it (ABI.md, "Optional exports: cursor and manifest").
//!
//! ```ignore
//! ardea::register_bolt!(Split, emits: [("default", ["word"])], reads: ["line"]);
//! ardea::register_spout!(Lines::default(), emits: [("default", ["line"])], config: ["count"]);
//! ```
//!
//! `ardea build` stores the manifest in the module (custom section
//! `ardea.manifest`); `ardea run` and `ardea submit` check the topology
//! against it before anything starts, and [`crate::testing::Tester`]
//! checks the component against it in unit tests. Declaring is optional:
//! what is not declared is not checked.

use crate::codec::Stream;

/// The SDK's version (the crate's, in Cargo.toml), written in manifests.
pub const SDK_VERSION: &str = "0.1.0";

/// The manifest format's version.
pub const MANIFEST_VERSION: u32 = 1;

/// A component's declarations: the streams and fields it emits, the input
/// fields it reads by name and the config keys it reads. `None` means not
/// declared (not checked); `Some(vec![])` declares none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declarations {
    /// The output streams, in order, with their fields.
    pub outputs: Option<Vec<Stream>>,
    /// The input fields read by name (a bolt).
    pub inputs: Option<Vec<String>>,
    /// The config keys read.
    pub config: Option<Vec<String>>,
}

impl Declarations {
    /// Nothing declared.
    pub fn new() -> Declarations {
        Declarations::default()
    }

    /// Declares an output stream and its fields (in emit order); call it
    /// once per stream.
    pub fn emits(mut self, stream: &str, fields: &[&str]) -> Declarations {
        self.outputs.get_or_insert_with(Vec::new).push(Stream::new(stream, fields));
        self
    }

    /// Declares that the component emits nothing (a sink).
    pub fn emits_nothing(mut self) -> Declarations {
        self.outputs.get_or_insert_with(Vec::new);
        self
    }

    /// Declares input fields the component reads by name.
    pub fn reads(mut self, fields: &[&str]) -> Declarations {
        self.inputs.get_or_insert_with(Vec::new).extend(fields.iter().map(|f| f.to_string()));
        self
    }

    /// Declares config keys the component reads.
    pub fn config(mut self, keys: &[&str]) -> Declarations {
        self.config.get_or_insert_with(Vec::new).extend(keys.iter().map(|k| k.to_string()));
        self
    }

    /// The manifest's JSON for a component of this kind ("spout" or
    /// "bolt"), as ABI.md gives it: undeclared parts are omitted.
    pub fn manifest_json(&self, kind: &str) -> String {
        let mut s = format!("{{\"manifest\":{},\"sdk\":{{\"language\":\"rust\",\"version\":", MANIFEST_VERSION);
        json_str(&mut s, SDK_VERSION);
        s += "},\"kind\":";
        json_str(&mut s, kind);
        if let Some(outs) = &self.outputs {
            s += ",\"outputs\":[";
            for (i, o) in outs.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s += "{\"stream\":";
                json_str(&mut s, &o.name);
                s += ",\"fields\":";
                json_list(&mut s, &o.fields);
                s.push('}');
            }
            s.push(']');
        }
        if let Some(inputs) = &self.inputs {
            s += ",\"inputs\":";
            json_list(&mut s, inputs);
        }
        if let Some(config) = &self.config {
            s += ",\"config\":";
            json_list(&mut s, config);
        }
        s.push('}');
        s
    }
}

fn json_list(out: &mut String, items: &[String]) {
    out.push('[');
    for (i, it) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_str(out, it);
    }
    out.push(']');
}

/// Appends s as a JSON string.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Builds [`Declarations`] from the registration macros' arguments.
#[doc(hidden)]
#[macro_export]
macro_rules! __ardea_declarations {
    ($($key:ident : [$($val:tt)*]),* $(,)?) => {{
        let d = $crate::Declarations::new();
        $( let d = $crate::__ardea_declare!(d, $key [$($val)*]); )*
        d
    }};
}

#[doc(hidden)]
#[macro_export]
macro_rules! __ardea_declare {
    ($d:ident, emits [$(($s:expr, [$($f:expr),* $(,)?])),* $(,)?]) => {
        $d.emits_nothing() $(.emits($s, &[$($f),*]))*
    };
    ($d:ident, reads [$($f:expr),* $(,)?]) => {
        $d.reads(&[$($f),*])
    };
    ($d:ident, config [$($f:expr),* $(,)?]) => {
        $d.config(&[$($f),*])
    };
    ($d:ident, $other:ident [$($t:tt)*]) => {
        compile_error!(concat!("ardea: unknown declaration `", stringify!($other), "`: use emits: [(\"stream\", [\"field\", ...]), ...], reads: [\"field\", ...] or config: [\"key\", ...]"))
    };
}
