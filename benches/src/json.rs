//! How the benchmarks print JSON: `serde_json` with a [`Formatter`] that fixes the layout.
//!
//! - [`to_line`]: one compact object per line (`{"client":"rzk","metric":...}`), for the JSON
//!   lines of `lock_latency`.
//! - [`to_document`]: the codec report. The members of the outer object, and the elements of an
//!   array among them, go one per line; anything deeper stays on one line with `", "` and
//!   `": "` (the layout `docs/benchmarks.md` shows: one line per message).
//!
//! Both write every floating-point number with three decimals (`1.250`, `0.068`), and a NaN or
//! infinity as `null` (`serde_json` does that before the formatter is asked). Three decimals of a
//! nanosecond or a microsecond are already more than the timings resolve.
//!
//! Reading is plain [`serde_json::from_str`] into a [`serde_json::Value`] (the smoke tests).

use std::io::{self, Write};

use serde::Serialize;
use serde_json::ser::Formatter;

/// `value` as one line of compact JSON (no newline).
pub fn to_line<T: Serialize + ?Sized>(value: &T) -> String {
    write(value, Layout::line())
}

/// `value` as the codec report's document (see the [module docs](self)), with a final newline.
pub fn to_document<T: Serialize + ?Sized>(value: &T) -> String {
    write(value, Layout::document()) + "\n"
}

fn write<T: Serialize + ?Sized>(value: &T, layout: Layout) -> String {
    let mut out = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, layout);
    // Our values are plain structs, options, numbers and strings: serializing them into a
    // `Vec` cannot fail (serde_json only errors on I/O or on maps with non-string keys).
    if let Err(e) = value.serialize(&mut serializer) {
        unreachable!("JSON serialization of a report failed: {e}");
    }
    String::from_utf8(out).unwrap_or_else(|e| unreachable!("serde_json wrote non-UTF-8: {e}"))
}

/// One open object or array.
#[derive(Debug, Clone, Copy)]
struct Open {
    /// One member per line.
    breaks: bool,
    /// No member written yet.
    empty: bool,
}

/// The [`Formatter`] of both layouts.
#[derive(Debug, Default)]
struct Layout {
    /// [`to_document`]'s layout; else [`to_line`]'s.
    document: bool,
    /// The open containers, outermost first.
    open: Vec<Open>,
}

impl Layout {
    fn line() -> Layout {
        Layout::default()
    }

    fn document() -> Layout {
        Layout {
            document: true,
            open: Vec::new(),
        }
    }

    fn begin<W: ?Sized + Write>(&mut self, w: &mut W, array: bool) -> io::Result<()> {
        // In a document the outer container breaks lines, and so does an array directly in
        // a container that breaks lines.
        let breaks = self.document
            && match self.open.last() {
                None => true,
                Some(parent) => parent.breaks && array,
            };
        self.open.push(Open {
            breaks,
            empty: true,
        });
        w.write_all(if array { b"[" } else { b"{" })
    }

    fn end<W: ?Sized + Write>(&mut self, w: &mut W, array: bool) -> io::Result<()> {
        let open = self.open.pop();
        if open.is_some_and(|open| open.breaks && !open.empty) {
            w.write_all(b"\n")?;
            self.indent(w)?;
        }
        w.write_all(if array { b"]" } else { b"}" })
    }

    /// Before a member (an array element, or an object key).
    fn member<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        let Some(open) = self.open.last_mut() else {
            return Ok(());
        };
        open.empty = false;
        let breaks = open.breaks;
        match (first, breaks, self.document) {
            (true, false, _) => Ok(()),
            (true, true, _) => {
                w.write_all(b"\n")?;
                self.indent(w)
            }
            (false, true, _) => {
                w.write_all(b",\n")?;
                self.indent(w)
            }
            (false, false, true) => w.write_all(b", "),
            (false, false, false) => w.write_all(b","),
        }
    }

    /// Two spaces per open container.
    fn indent<W: ?Sized + Write>(&self, w: &mut W) -> io::Result<()> {
        for _ in 0..self.open.len() {
            w.write_all(b"  ")?;
        }
        Ok(())
    }
}

impl Formatter for Layout {
    fn write_f64<W: ?Sized + Write>(&mut self, w: &mut W, value: f64) -> io::Result<()> {
        write!(w, "{value:.3}")
    }

    fn write_f32<W: ?Sized + Write>(&mut self, w: &mut W, value: f32) -> io::Result<()> {
        self.write_f64(w, f64::from(value))
    }

    fn begin_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, true)
    }

    fn end_array<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, true)
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.member(w, first)
    }

    fn begin_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.begin(w, false)
    }

    fn end_object<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.end(w, false)
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        self.member(w, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(if self.document { b": " } else { b":" })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    #[derive(Serialize)]
    struct Inner {
        a: f64,
        b: Option<f64>,
        c: &'static str,
    }

    #[derive(Serialize)]
    struct Outer {
        name: &'static str,
        n: u64,
        inner: Inner,
        list: Vec<Inner>,
        none: Option<Inner>,
        empty: Vec<u8>,
    }

    fn inner(a: f64) -> Inner {
        Inner {
            a,
            b: None,
            c: "q\"\\\n\u{1}é",
        }
    }

    #[test]
    fn document_puts_outer_members_and_array_elements_on_their_own_lines() {
        let outer = Outer {
            name: "codec",
            n: 3,
            inner: inner(1.25),
            list: vec![inner(-2500.0), inner(f64::NAN)],
            none: None,
            empty: Vec::new(),
        };
        let text = to_document(&outer);
        assert_eq!(
            text,
            r#"{
  "name": "codec",
  "n": 3,
  "inner": {"a": 1.250, "b": null, "c": "q\"\\\n\u0001é"},
  "list": [
    {"a": -2500.000, "b": null, "c": "q\"\\\n\u0001é"},
    {"a": null, "b": null, "c": "q\"\\\n\u0001é"}
  ],
  "none": null,
  "empty": []
}
"#
        );
        let value: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(value["list"][0]["a"].as_f64(), Some(-2500.0));
        assert_eq!(value["inner"]["c"].as_str(), Some("q\"\\\n\u{1}é"));
    }

    #[test]
    fn line_is_compact_with_three_decimals() {
        let outer = Outer {
            name: "rzk",
            n: 7,
            inner: inner(12.0),
            list: vec![inner(0.0004)],
            none: None,
            empty: vec![1, 2],
        };
        assert_eq!(
            to_line(&outer),
            r#"{"name":"rzk","n":7,"inner":{"a":12.000,"b":null,"c":"q\"\\\n\u0001é"},"list":[{"a":0.000,"b":null,"c":"q\"\\\n\u0001é"}],"none":null,"empty":[1,2]}"#
        );
        assert_eq!(to_line(&f64::INFINITY), "null");
        assert_eq!(to_line(&Value::from(2.5)), "2.500");
    }
}
