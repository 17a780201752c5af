//! The credential store and the call to `gss_acquire_cred_from`.

use std::ffi::{CString, c_void};
use std::ptr;

use libgssapi::credential::Cred;
use libgssapi::error::{Error as GssError, MajorFlags};
use libgssapi_sys::{
    _GSS_C_INDEFINITE, GSS_C_INITIATE, OM_uint32, gss_OID_desc, gss_acquire_cred_from,
    gss_buffer_desc, gss_cred_id_t, gss_import_name, gss_key_value_element_desc,
    gss_key_value_set_desc, gss_name_t, gss_release_name,
};

/// The DER body of the OID 1.2.840.113554.1.2.2.1 (`GSS_KRB5_NT_PRINCIPAL_NAME`): a name of
/// the form `user[/instance][@REALM]`.
const KRB5_NT_PRINCIPAL_NAME: [u8; 10] =
    [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01];

/// The bits of a major status that say the call failed (the calling and routine errors),
/// as `GSS_ERROR()` tests them.
const GSS_ERROR_MASK: OM_uint32 = 0xffff_0000;

/// Where the credentials come from: MIT's credential store keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CredStore {
    /// The credential cache (`ccache`): read for a ticket-granting ticket, and where tickets
    /// obtained with the client keytab are stored. E.g. `FILE:/tmp/krb5cc_app`,
    /// `MEMORY:app`, `DIR:/run/app/cc`.
    pub ccache: Option<String>,
    /// The client keytab (`client_keytab`): the principal's keys, with which the library
    /// asks the KDC for a ticket when the cache has none. E.g. `/etc/app/client.keytab`.
    pub client_keytab: Option<String>,
}

/// Why credentials could not be acquired.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcquireError {
    /// A name or a store entry holds a NUL byte (C strings cannot carry it).
    #[error("a Kerberos principal or credential store entry holds a NUL byte: {0:?}")]
    Nul(String),
    /// The GSSAPI library refused (no ticket and no usable key, an unknown principal, an
    /// unreadable cache or keytab...).
    #[error(transparent)]
    Gss(#[from] GssError),
}

/// Acquires initiator (client) credentials for `principal` (`None`: the cache's default
/// principal, or the first of the client keytab) from `store` (entries left `None` take the
/// library's defaults).
///
/// # Errors
///
/// [`AcquireError::Nul`] for a NUL byte in an input, [`AcquireError::Gss`] when the library
/// fails.
pub fn acquire_initiator(principal: Option<&str>, store: &CredStore) -> Result<Cred, AcquireError> {
    let name = principal.map(ImportedName::principal).transpose()?;
    let entries: Vec<(CString, CString)> = [
        ("ccache", &store.ccache),
        ("client_keytab", &store.client_keytab),
    ]
    .into_iter()
    .filter_map(|(key, value)| value.as_ref().map(|value| (key, value)))
    .map(|(key, value)| {
        let key = CString::new(key).map_err(|_| AcquireError::Nul(key.to_owned()))?;
        let value = CString::new(value.as_str()).map_err(|_| AcquireError::Nul(value.clone()))?;
        Ok((key, value))
    })
    .collect::<Result<_, AcquireError>>()?;
    let mut elements: Vec<gss_key_value_element_desc> = entries
        .iter()
        .map(|(key, value)| gss_key_value_element_desc {
            key: key.as_ptr(),
            value: value.as_ptr(),
        })
        .collect();
    let set = gss_key_value_set_desc {
        count: OM_uint32::try_from(elements.len()).unwrap_or(0),
        elements: elements.as_mut_ptr(),
    };
    let mut minor: OM_uint32 = 0;
    let mut cred: gss_cred_id_t = ptr::null_mut();
    // SAFETY: every pointer is valid for the call: `name` is a live imported name (or null:
    // the default principal), `set` points into `elements`, whose C strings `entries` keeps
    // alive until after the call; the desired mechanisms, the actual mechanisms and the
    // lifetime are null (the defaults / not wanted); `cred` and `minor` are out-parameters.
    let major = unsafe {
        gss_acquire_cred_from(
            &mut minor,
            name.as_ref().map_or(ptr::null_mut(), |n| n.0),
            _GSS_C_INDEFINITE,
            ptr::null_mut(),
            GSS_C_INITIATE as i32,
            &set,
            &mut cred,
            ptr::null_mut(),
            ptr::null_mut(),
        )
    };
    check(major, minor)?;
    // SAFETY: on success `cred` is a credential handle that this call created and nobody
    // else holds; `Cred` takes sole ownership and releases it when dropped.
    Ok(unsafe { Cred::from_c(cred) })
}

/// A name imported with `gss_import_name`, released when dropped.
struct ImportedName(gss_name_t);

impl ImportedName {
    /// `principal` as a Kerberos principal name.
    fn principal(principal: &str) -> Result<ImportedName, AcquireError> {
        if principal.contains('\0') {
            return Err(AcquireError::Nul(principal.to_owned()));
        }
        let mut oid_bytes = KRB5_NT_PRINCIPAL_NAME;
        let mut oid = gss_OID_desc {
            length: KRB5_NT_PRINCIPAL_NAME.len() as OM_uint32,
            elements: oid_bytes.as_mut_ptr().cast::<c_void>(),
        };
        let mut buffer = gss_buffer_desc {
            length: principal.len(),
            value: principal.as_ptr().cast_mut().cast::<c_void>(),
        };
        let mut minor: OM_uint32 = 0;
        let mut name: gss_name_t = ptr::null_mut();
        // SAFETY: `buffer` points to `principal`'s bytes and `oid` to `oid_bytes`, both alive
        // for the call, which only reads them (it copies the name); `name` and `minor` are
        // out-parameters.
        let major = unsafe { gss_import_name(&mut minor, &mut buffer, &mut oid, &mut name) };
        check(major, minor)?;
        Ok(ImportedName(name))
    }
}

impl Drop for ImportedName {
    fn drop(&mut self) {
        if !self.0.is_null() {
            let mut minor: OM_uint32 = 0;
            // SAFETY: `self.0` is a name `gss_import_name` created and only this value holds;
            // it is released once, here.
            unsafe {
                gss_release_name(&mut minor, &mut self.0);
            }
        }
    }
}

/// `Err` when `major` says the call failed.
fn check(major: OM_uint32, minor: OM_uint32) -> Result<(), GssError> {
    if major & GSS_ERROR_MASK == 0 {
        Ok(())
    } else {
        Err(GssError {
            major: MajorFlags::from_bits_retain(major),
            minor,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nul_bytes_are_refused_before_the_library_is_called() {
        assert!(matches!(
            acquire_initiator(Some("al\0ice"), &CredStore::default()),
            Err(AcquireError::Nul(_))
        ));
        let store = CredStore {
            ccache: Some("MEMORY:a\0b".to_owned()),
            client_keytab: None,
        };
        assert!(matches!(
            acquire_initiator(None, &store),
            Err(AcquireError::Nul(_))
        ));
    }

    #[test]
    fn a_missing_keytab_and_an_empty_cache_are_a_library_error() {
        let store = CredStore {
            ccache: Some("MEMORY:zk-gss-store-test-empty".to_owned()),
            client_keytab: Some("/nonexistent/zk-gss-store/client.keytab".to_owned()),
        };
        assert!(matches!(
            acquire_initiator(Some("nobody@NOWHERE.INVALID"), &store),
            Err(AcquireError::Gss(_))
        ));
    }
}
