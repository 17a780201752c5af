//! Allocation of request xids.

/// Hands out the xids of normal requests: `1 ..= i32::MAX - 1`, then back to 1, as the Java
/// client does. Never zero or negative, so never one of the reserved xids (notification -1,
/// ping -2, auth -4, set-watches -8). Not reset on reconnect.
#[derive(Debug, Clone)]
pub(crate) struct XidAllocator {
    next: i32,
}

impl XidAllocator {
    pub(crate) fn new() -> Self {
        Self { next: 1 }
    }

    #[cfg(test)]
    pub(crate) fn starting_at(next: i32) -> Self {
        Self { next }
    }

    pub(crate) fn next(&mut self) -> i32 {
        let xid = self.next;
        self.next = if xid >= i32::MAX - 1 { 1 } else { xid + 1 };
        xid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_one_and_wraps_before_max() {
        let mut xids = XidAllocator::new();
        assert_eq!(xids.next(), 1);
        assert_eq!(xids.next(), 2);
        let mut xids = XidAllocator::starting_at(i32::MAX - 2);
        assert_eq!(xids.next(), i32::MAX - 2);
        assert_eq!(xids.next(), i32::MAX - 1);
        assert_eq!(xids.next(), 1);
    }
}
