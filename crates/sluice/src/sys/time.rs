//! Times from libc that rustix does not offer: CPU time used (getrusage),
//! local time and its formatting (localtime_r, strftime, mktime, which
//! read the time zone database), and a calendar time in UTC (timegm).

use std::ffi::CStr;
use std::time::Duration;

/// Whose CPU time [`cpu_time`] reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// The whole process, every thread (RUSAGE_SELF).
    Process,
    /// The children waited for so far (RUSAGE_CHILDREN).
    Children,
    /// The calling thread (RUSAGE_THREAD).
    Thread,
}

/// User plus system CPU time of `who` (getrusage(2)); None when the call
/// fails. rustix has no getrusage.
pub fn cpu_time(who: Who) -> Option<Duration> {
    let who = match who {
        Who::Process => libc::RUSAGE_SELF,
        Who::Children => libc::RUSAGE_CHILDREN,
        Who::Thread => libc::RUSAGE_THREAD,
    };
    let mut r = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one struct rusage to a pointer valid for it.
    if unsafe { libc::getrusage(who, r.as_mut_ptr()) } != 0 {
        return None;
    }
    // SAFETY: all-zero is a valid rusage (plain integers), and getrusage
    // filled it.
    let r = unsafe { r.assume_init() };
    let tv = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    Some(tv(r.ru_utime) + tv(r.ru_stime))
}

/// A calendar date and time of day, as written (month 1 to 12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    /// The year, e.g. 2025.
    pub year: i32,
    /// 1 to 12.
    pub mon: i32,
    /// 1 to 31.
    pub day: i32,
    /// 0 to 23.
    pub hour: i32,
    /// 0 to 59.
    pub min: i32,
    /// 0 to 60.
    pub sec: i32,
}

impl Civil {
    fn tm(&self) -> libc::tm {
        // SAFETY: tm is plain data (integers and a pointer that may be
        // NULL); all-zero is a valid value.
        let mut tm: libc::tm = unsafe { std::mem::zeroed() };
        tm.tm_year = self.year - 1900;
        tm.tm_mon = self.mon - 1;
        tm.tm_mday = self.day;
        tm.tm_hour = self.hour;
        tm.tm_min = self.min;
        tm.tm_sec = self.sec;
        tm.tm_isdst = -1;
        tm
    }
}

/// Seconds since the epoch of `c` read as UTC (timegm(3)); -1 when it
/// cannot be represented.
pub fn timegm(c: &Civil) -> i64 {
    let mut tm = c.tm();
    // SAFETY: timegm reads and normalises the tm we own.
    unsafe { libc::timegm(&mut tm) }
}

/// Seconds since the epoch of `c` read as local time, daylight saving
/// time decided by the time zone (mktime(3), tm_isdst -1); -1 when it
/// cannot be represented.
pub fn mktime(c: &Civil) -> i64 {
    let mut tm = c.tm();
    // SAFETY: mktime reads and normalises the tm we own (and reads the
    // time zone, as localtime_r does).
    unsafe { libc::mktime(&mut tm) }
}

/// A time broken down in the local time zone, for [`strftime`].
pub struct LocalTime(libc::tm);

/// `t` (seconds since the epoch) in the local time zone (localtime_r(3));
/// None when it cannot be represented.
pub fn localtime(t: i64) -> Option<LocalTime> {
    let tt = t as libc::time_t;
    // SAFETY: tm is plain data; all-zero is a valid value.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: localtime_r reads a valid time_t and fills the tm we own.
    if unsafe { libc::localtime_r(&tt, &mut tm) }.is_null() {
        return None;
    }
    Some(LocalTime(tm))
}

/// `tm` formatted by strftime(3) with `fmt` (in the locale's words), up
/// to 63 bytes: a longer result is "" (strftime's 0).
pub fn strftime(fmt: &CStr, tm: &LocalTime) -> String {
    let mut buf = [0u8; 64];
    // SAFETY: strftime writes at most buf.len() bytes into our buffer; the
    // format is NUL-terminated and the tm was filled by localtime_r.
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), &tm.0) };
    String::from_utf8_lossy(buf.get(..n).unwrap_or_default()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_and_cpu_times() {
        let c = Civil {
            year: 2025,
            mon: 11,
            day: 24,
            hour: 15,
            min: 30,
            sec: 0,
        };
        assert_eq!(timegm(&c), 1_763_998_200);
        assert!(mktime(&c) > 0);
        let tm = localtime(0).unwrap();
        assert!(!strftime(c"%Y", &tm).is_empty());
        assert!(cpu_time(Who::Process).is_some());
        assert!(cpu_time(Who::Thread).is_some());
        assert!(cpu_time(Who::Children).is_some());
    }
}
