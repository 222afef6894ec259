//! Transparent huge pages for the process (`transparentHugePages`, #25): left as the system and
//! the allocator set them, or disabled (Linux `PR_SET_THP_DISABLE`, which overrides the
//! allocator's `MADV_HUGEPAGE`) before the nameserver allocates its tables. Only the binary
//! does this: it is a setting of the whole process, which an embedding program owns.

/// Allows transparent huge pages (`true`: nothing changes) or disables them for the process;
/// a failure (a kernel without the call) is logged, not fatal.
pub fn allow(allowed: bool) {
    if allowed {
        return;
    }
    #[cfg(target_os = "linux")]
    match rustix::thread::disable_transparent_huge_pages(true) {
        Ok(()) => tracing::info!("transparent huge pages disabled (transparentHugePages=false)"),
        Err(e) => tracing::warn!(error = %e, "cannot disable transparent huge pages"),
    }
    #[cfg(not(target_os = "linux"))]
    tracing::warn!("transparentHugePages=false has no effect on this system");
}
