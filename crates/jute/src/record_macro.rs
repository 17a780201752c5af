//! The `records!` macro: from one table entry per record, the struct, its borrowed view,
//! [`Encode`](crate::Encode), [`Decode`](crate::Decode), [`DecodeView`](crate::view::DecodeView),
//! the proptest strategy and the by-name registry (see [`crate::records`]).

macro_rules! records {
    ($(
        $(#[$meta:meta])*
        $name:ident / $view:ident = $jute:literal {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty $(= $absent:expr)? ),* $(,)?
        }
    )*) => {
        $(
            $(#[$meta])*
            #[doc = concat!("\n\nReference class: `org.apache.zookeeper.", $jute, "`.")]
            #[derive(Debug, Clone, PartialEq, Eq, Default)]
            pub struct $name {
                $( $(#[$fmeta])* pub $field: $ty, )*
            }

            impl Encode for $name {
                fn encoded_len(&self) -> usize {
                    0 $( + Encode::encoded_len(&self.$field) )*
                }
                fn encode<B: BufMut>(&self, buf: &mut B) {
                    $( Encode::encode(&self.$field, buf); )*
                }
            }

            impl Decode for $name {
                const MIN_LEN: usize = 0 $( + field_min_len!($ty $(, $absent)?) )*;
                fn decode(reader: &mut Reader) -> Result<Self, DecodeError> {
                    Ok(Self {
                        $(
                            $field: decode_field!(reader, $ty $(, $absent)?).map_err(|e| {
                                e.within(concat!(stringify!($name), ".", stringify!($field)))
                            })?,
                        )*
                    })
                }
            }

            #[doc = concat!("The borrowed view of a [`", stringify!($name), "`]: its fields as ")]
            #[doc = "[`DecodeView`](crate::view::DecodeView) maps them, borrowed from the decoded bytes"]
            #[doc = "(see [`crate::view`]). Decoded by [`decode_view_exact`](crate::view::decode_view_exact)"]
            #[doc = concat!("`::<", stringify!($name), ">` or [`", stringify!($view), "::decode`].")]
            #[derive(Debug, Clone, PartialEq)]
            pub struct $view<'a> {
                $( $(#[$fmeta])* pub $field: <$ty as crate::view::DecodeView>::View<'a>, )*
            }

            impl<'a> $view<'a> {
                #[doc = concat!("Reads one view from the front of `reader`, as [`", stringify!($name), "`]'s")]
                /// [`Decode::decode`] reads the owned record (same errors).
                pub fn decode(
                    reader: &mut crate::view::SliceReader<'a>,
                ) -> Result<Self, DecodeError> {
                    <$name as crate::view::DecodeView>::decode_view(reader)
                }

                /// The owned record: what [`Decode::decode`] gives for the same bytes.
                pub fn into_owned(self) -> $name {
                    <$name as crate::view::DecodeView>::from_view(self)
                }
            }

            impl From<$view<'_>> for $name {
                fn from(view: $view<'_>) -> Self {
                    view.into_owned()
                }
            }

            impl crate::view::DecodeView for $name {
                type View<'a> = $view<'a>;
                fn decode_view<'a>(
                    reader: &mut crate::view::SliceReader<'a>,
                ) -> Result<$view<'a>, DecodeError> {
                    Ok($view {
                        $(
                            $field: decode_view_field!(reader, $ty $(, $absent)?).map_err(|e| {
                                e.within(concat!(stringify!($name), ".", stringify!($field)))
                            })?,
                        )*
                    })
                }
                fn skip_view(
                    reader: &mut crate::view::SliceReader<'_>,
                ) -> Result<(), DecodeError> {
                    $(
                        skip_view_field!(reader, $ty $(, $absent)?).map_err(|e| {
                            e.within(concat!(stringify!($name), ".", stringify!($field)))
                        })?;
                    )*
                    Ok(())
                }
                fn from_view(view: $view<'_>) -> Self {
                    Self {
                        $( $field: <$ty as crate::view::DecodeView>::from_view(view.$field), )*
                    }
                }
            }

            #[cfg(any(test, feature = "proptest"))]
            impl crate::strategy::Generate for $name {
                fn strategy() -> proptest::strategy::BoxedStrategy<Self> {
                    use proptest::strategy::Strategy;
                    ( $( <$ty as crate::strategy::Generate>::strategy(), )* )
                        .prop_map(|( $( $field, )* )| Self { $( $field ),* })
                        .boxed()
                }
            }
        )*

        /// The reference class names (`"data.Stat"`, `"proto.CreateRequest"`, ...) of every
        /// record declared in this module, in declaration order. (Feature `fuzzing`.)
        #[cfg(any(test, feature = "fuzzing"))]
        pub const RECORD_NAMES: &[&str] = &[ $( $jute ),* ];

        /// Decodes `bytes` as the record whose reference class is `jute_name` (exactly, trailing
        /// bytes are an error) and encodes it again. `None` if no record has that name.
        ///
        /// This is the hook of the conformance tests and fuzz targets: for every canonical
        /// encoding, the output equals the input (see [`same_value_named`] for the others).
        /// (Feature `fuzzing`.)
        #[cfg(any(test, feature = "fuzzing"))]
        pub fn reencode_named(jute_name: &str, bytes: Bytes) -> Option<Result<Bytes, DecodeError>> {
            match jute_name {
                $( $jute => Some(crate::reader::decode_exact::<$name>(bytes).map(|r| r.to_bytes())), )*
                _ => None,
            }
        }

        /// Decodes `a` and `b` as the record whose reference class is `jute_name` (each exactly)
        /// and tells whether they are the same value. `None` if no record has that name.
        ///
        /// The value oracle of the conformance tests and fuzz targets, for the encodings that
        /// decode to a value whose encoding is other bytes (strings in Java's surrogate form, a
        /// ConnectRequest without its readOnly byte).
        #[cfg(any(test, feature = "fuzzing"))]
        #[doc(hidden)]
        pub fn same_value_named(
            jute_name: &str,
            a: Bytes,
            b: Bytes,
        ) -> Option<Result<bool, DecodeError>> {
            fn same<T: Decode + PartialEq>(a: Bytes, b: Bytes) -> Result<bool, DecodeError> {
                Ok(crate::reader::decode_exact::<T>(a)? == crate::reader::decode_exact::<T>(b)?)
            }
            match jute_name {
                $( $jute => Some(same::<$name>(a, b)), )*
                _ => None,
            }
        }

        /// Decodes `bytes` as the record whose reference class is `jute_name` (exactly), both
        /// owned and as its borrowed view, and checks that the two agree: the same value (the
        /// view made owned) or the same error. `Err` describes a disagreement; `None` if no
        /// record has that name. (Feature `fuzzing`.)
        #[cfg(any(test, feature = "fuzzing"))]
        #[doc(hidden)]
        pub fn view_agrees_named(jute_name: &str, bytes: &[u8]) -> Option<Result<(), String>> {
            match jute_name {
                $( $jute => Some(crate::view::view_agrees::<$name>(bytes)), )*
                _ => None,
            }
        }

        #[cfg(test)]
        mod generated_properties {
            $(
                #[allow(non_snake_case)]
                mod $name {
                    #[test]
                    fn properties() {
                        crate::strategy::check_properties::<super::super::$name>();
                    }

                    #[test]
                    fn view_agrees() {
                        crate::strategy::check_view_agrees::<super::super::$name>();
                    }
                }
            )*
        }
    };
}

/// The smallest encoding of a field: nothing for a field that may be absent at the end.
macro_rules! field_min_len {
    ($ty:ty) => {
        <$ty as Decode>::MIN_LEN
    };
    ($ty:ty, $absent:expr) => {
        0
    };
}

/// Decodes a field; one that may be absent at the end takes its value when no byte is left.
macro_rules! decode_field {
    ($reader:ident, $ty:ty) => {
        <$ty as Decode>::decode($reader)
    };
    ($reader:ident, $ty:ty, $absent:expr) => {
        if $reader.is_empty() {
            Ok($absent)
        } else {
            <$ty as Decode>::decode($reader)
        }
    };
}

/// Decodes a field's view; one that may be absent at the end takes its value when no byte is
/// left, as `decode_field!` does.
macro_rules! decode_view_field {
    ($reader:ident, $ty:ty) => {
        <$ty as crate::view::DecodeView>::decode_view($reader)
    };
    ($reader:ident, $ty:ty, $absent:expr) => {
        if $reader.is_empty() {
            Ok($absent)
        } else {
            <$ty as crate::view::DecodeView>::decode_view($reader)
        }
    };
}

/// Moves past a field without building its view, as `decode_view_field!` reads it.
macro_rules! skip_view_field {
    ($reader:ident, $ty:ty) => {
        <$ty as crate::view::DecodeView>::skip_view($reader)
    };
    ($reader:ident, $ty:ty, $absent:expr) => {
        if $reader.is_empty() {
            Ok(())
        } else {
            <$ty as crate::view::DecodeView>::skip_view($reader)
        }
    };
}
