//! proptest strategies for every record (feature `proptest`), and the shared property checks.

use bytes::Bytes;
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

/// A type with a proptest strategy covering its whole wire range: null and empty values, non-ASCII
/// strings, negative numbers, unknown codes.
pub trait Generate: Sized + std::fmt::Debug {
    /// The strategy.
    fn strategy() -> BoxedStrategy<Self>;
}

impl Generate for i32 {
    fn strategy() -> BoxedStrategy<Self> {
        any::<i32>().boxed()
    }
}

impl Generate for i64 {
    fn strategy() -> BoxedStrategy<Self> {
        any::<i64>().boxed()
    }
}

impl Generate for bool {
    fn strategy() -> BoxedStrategy<Self> {
        any::<bool>().boxed()
    }
}

impl Generate for Option<bool> {
    fn strategy() -> BoxedStrategy<Self> {
        proptest::option::of(any::<bool>()).boxed()
    }
}

impl Generate for Option<String> {
    fn strategy() -> BoxedStrategy<Self> {
        proptest::option::of(prop_oneof![
            Just(String::new()),
            "[/a-z0-9_-]{1,24}",
            "\\PC{0,12}",
        ])
        .boxed()
    }
}

impl Generate for Option<Bytes> {
    fn strategy() -> BoxedStrategy<Self> {
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64).prop_map(Bytes::from))
            .boxed()
    }
}

impl<T: Generate + 'static> Generate for Option<Vec<T>> {
    fn strategy() -> BoxedStrategy<Self> {
        proptest::option::of(proptest::collection::vec(T::strategy(), 0..6)).boxed()
    }
}

/// A `vector<ustring>`: null or not, with null and empty entries among the others.
impl Generate for Option<crate::StringList> {
    fn strategy() -> BoxedStrategy<Self> {
        <Option<Vec<Option<String>>>>::strategy()
            .prop_map(|entries| entries.map(crate::StringList::from_nullable))
            .boxed()
    }
}

#[cfg(test)]
pub(crate) use checks::{check_properties, check_view_agrees};

#[cfg(test)]
mod checks {
    use proptest::test_runner::{Config, TestRunner};

    use super::*;
    use crate::reader::{Decode, Encode, decode_exact};
    use crate::view::{DecodeView, view_agrees};

    /// For every generated value of `T`, its encoding, every strict prefix of it, the encoding
    /// with one byte changed and with a byte appended, and arbitrary bytes: the borrowed view
    /// decodes exactly when the owned record does, to the same value (made owned), and fails
    /// with the same error (kind and location) otherwise.
    pub(crate) fn check_view_agrees<T>()
    where
        T: Generate + Encode + DecodeView + PartialEq + std::fmt::Debug + 'static,
    {
        let mut runner = TestRunner::new(Config {
            cases: 128,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(
                &(T::strategy(), any::<prop::sample::Index>(), any::<u8>()),
                |(value, at, byte)| {
                    let bytes = value.to_bytes().to_vec();
                    let agrees =
                        |input: &[u8]| view_agrees::<T>(input).map_err(TestCaseError::fail);
                    agrees(&bytes)?;
                    for cut in 0..bytes.len() {
                        agrees(&bytes[..cut])?;
                    }
                    if !bytes.is_empty() {
                        let mut changed = bytes.clone();
                        changed[at.index(bytes.len())] = byte;
                        agrees(&changed)?;
                    }
                    let mut extended = bytes;
                    extended.push(byte);
                    agrees(&extended)
                },
            )
            .unwrap();
        runner
            .run(&proptest::collection::vec(any::<u8>(), 0..256), |raw| {
                view_agrees::<T>(&raw).map_err(TestCaseError::fail)
            })
            .unwrap();
    }

    /// For every generated value of `T`: decoding its encoding gives it back, `encoded_len` is
    /// exact, every strict prefix of the encoding fails to decode, and arbitrary bytes decode
    /// to a value or an error, never a panic.
    pub(crate) fn check_properties<T>()
    where
        T: Generate + Encode + Decode + PartialEq + Clone + 'static,
    {
        let mut runner = TestRunner::new(Config {
            cases: 128,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(&T::strategy(), |value| {
                let bytes = value.to_bytes();
                prop_assert_eq!(bytes.len(), value.encoded_len());
                let decoded = decode_exact::<T>(bytes.clone());
                prop_assert_eq!(decoded.as_ref(), Ok(&value));
                for cut in 0..bytes.len() {
                    let truncated = decode_exact::<T>(bytes.slice(..cut));
                    // A record ending in an optional trailing field stays valid when exactly
                    // that field is cut: as absent (ConnectResponse's readOnly, which then
                    // encodes as the prefix) or as its value for absence (ConnectRequest's
                    // readOnly, false, which then encodes with the byte again).
                    if let Ok(shorter) = truncated {
                        prop_assert!(cut + 1 == bytes.len(), "prefix of {} bytes decoded", cut);
                        let again = shorter.to_bytes();
                        prop_assert!(
                            again == bytes.slice(..cut)
                                || (again.len() == bytes.len() && again[..cut] == bytes[..cut]),
                            "prefix of {} bytes decoded to {:?}",
                            cut,
                            shorter
                        );
                    }
                }
                let mut extended = bytes.to_vec();
                extended.push(0);
                // A trailing byte is never silently dropped: it is an error, or (after an
                // absent optional trailing field) it becomes that field.
                prop_assert_ne!(decode_exact::<T>(Bytes::from(extended)).ok(), Some(value));
                Ok(())
            })
            .unwrap();
        runner
            .run(&proptest::collection::vec(any::<u8>(), 0..256), |raw| {
                if let Ok(value) = decode_exact::<T>(Bytes::from(raw)) {
                    // Whatever decodes must encode again (not necessarily to the same bytes:
                    // a multi end marker's ignored fields, for one).
                    let _ = value.to_bytes();
                }
                Ok(())
            })
            .unwrap();
    }
}
