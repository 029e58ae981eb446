//! GPIO character device, uAPI v2 (Linux 5.10+): line requests with edge
//! detection and the blocking `read` of `struct gpio_v2_line_event` records
//! (`rtscope irq --source gpio:CHIP:LINE`), and output lines for the
//! built-in driver (`--drive`).
//!
//! Direct ioctls rather than the `gpiocdev` crate: `gpiocdev` can read an
//! event onto the stack without allocating, so allocation is not the reason.
//! The reasons are that (1) every `unsafe` call rtscope makes is meant to be
//! reviewable here, in `sys/`, and `gpiocdev-uapi` carries its own ioctl
//! wrappers; (2) the reader must see `EINTR` when the run's stop signal
//! interrupts a blocked `read` (`rt::wake_thread`), as the `rtc` reader does,
//! which is easiest to guarantee with our own one-call wrapper; (3) the
//! uAPI needed is three structs and three requests, and the cross builds
//! (aarch64-musl, armv7) gain no dependency. The structs below are laid out
//! exactly as in `<linux/gpio.h>` (every 64-bit field is `__aligned_u64`:
//! 8-byte aligned on 32-bit ARM too); sizes are checked at compile time.
//!
//! The hot path is [`gpio_read_events`]: one `read` into a caller-owned
//! slice of records, no allocation.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

/// `GPIO_MAX_NAME_SIZE`.
const NAME: usize = 32;
/// `GPIO_V2_LINES_MAX`.
const LINES_MAX: usize = 64;
/// `GPIO_V2_LINE_NUM_ATTRS_MAX`.
const ATTRS_MAX: usize = 10;

/// `GPIO_V2_LINE_FLAG_*`.
pub const GPIO_FLAG_INPUT: u64 = 1 << 2;
pub const GPIO_FLAG_OUTPUT: u64 = 1 << 3;
pub const GPIO_FLAG_EDGE_RISING: u64 = 1 << 4;
pub const GPIO_FLAG_EDGE_FALLING: u64 = 1 << 5;
pub const GPIO_FLAG_EVENT_CLOCK_REALTIME: u64 = 1 << 11;
pub const GPIO_FLAG_EVENT_CLOCK_HTE: u64 = 1 << 12;

/// `gpio_v2_line_event.id`.
pub const GPIO_EVENT_RISING_EDGE: u32 = 1;
pub const GPIO_EVENT_FALLING_EDGE: u32 = 2;

/// `struct gpiochip_info`.
#[repr(C)]
struct ChipInfo {
    name: [u8; NAME],
    label: [u8; NAME],
    lines: u32,
}

/// `struct gpio_v2_line_attribute` (the union is 8 bytes: flags, values or
/// the debounce period).
#[repr(C)]
#[derive(Clone, Copy)]
struct LineAttribute {
    id: u32,
    padding: u32,
    value: u64,
}

/// `struct gpio_v2_line_config_attribute`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ConfigAttribute {
    attr: LineAttribute,
    mask: u64,
}

/// `struct gpio_v2_line_config`.
#[repr(C)]
struct LineConfig {
    flags: u64,
    num_attrs: u32,
    padding: [u32; 5],
    attrs: [ConfigAttribute; ATTRS_MAX],
}

/// `struct gpio_v2_line_request`.
#[repr(C)]
struct LineRequest {
    offsets: [u32; LINES_MAX],
    consumer: [u8; NAME],
    config: LineConfig,
    num_lines: u32,
    event_buffer_size: u32,
    padding: [u32; 5],
    fd: i32,
}

/// `struct gpio_v2_line_values`.
#[repr(C)]
struct LineValues {
    bits: u64,
    mask: u64,
}

/// `struct gpio_v2_line_event`: one edge, stamped by the kernel in the
/// interrupt handler (or by a hardware timestamp engine).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GpioLineEvent {
    /// The edge's time, ns, on the request's event clock (CLOCK_MONOTONIC
    /// unless `GPIO_FLAG_EVENT_CLOCK_*` asked otherwise).
    pub timestamp_ns: u64,
    /// [`GPIO_EVENT_RISING_EDGE`] or [`GPIO_EVENT_FALLING_EDGE`].
    pub id: u32,
    /// The line's offset on its chip.
    pub offset: u32,
    /// Sequence number of the event in the request (from 1).
    pub seqno: u32,
    /// Sequence number of the event on this line (from 1).
    pub line_seqno: u32,
    pub padding: [u32; 6],
}

/// Size of one event record as the kernel writes it.
pub const GPIO_EVENT_SIZE: usize = 48;

const _: () = assert!(std::mem::size_of::<ChipInfo>() == 68);
const _: () = assert!(std::mem::size_of::<LineAttribute>() == 16);
const _: () = assert!(std::mem::size_of::<ConfigAttribute>() == 24);
const _: () = assert!(std::mem::size_of::<LineConfig>() == 272);
const _: () = assert!(std::mem::size_of::<LineRequest>() == 592);
const _: () = assert!(std::mem::size_of::<LineValues>() == 16);
const _: () = assert!(std::mem::size_of::<GpioLineEvent>() == GPIO_EVENT_SIZE);

/// `_IOC(dir, 0xB4, nr, size)` (asm-generic encoding: ARM, x86, RISC-V).
const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    (dir << 30) | ((size as u32) << 16) | (0xB4 << 8) | nr
}
const IOC_READ: u32 = 2;
const IOC_RW: u32 = 3;
/// `GPIO_GET_CHIPINFO_IOCTL`: `_IOR(0xB4, 0x01, struct gpiochip_info)`.
const GET_CHIPINFO: u32 = ioc(IOC_READ, 0x01, std::mem::size_of::<ChipInfo>());
/// `GPIO_V2_GET_LINE_IOCTL`: `_IOWR(0xB4, 0x07, struct gpio_v2_line_request)`.
const V2_GET_LINE: u32 = ioc(IOC_RW, 0x07, std::mem::size_of::<LineRequest>());
/// `GPIO_V2_LINE_SET_VALUES_IOCTL`: `_IOWR(0xB4, 0x0F, struct gpio_v2_line_values)`.
const V2_SET_VALUES: u32 = ioc(IOC_RW, 0x0F, std::mem::size_of::<LineValues>());

impl GpioLineEvent {
    /// Decodes one record from the bytes the kernel writes (native byte
    /// order); `None` if fewer than [`GPIO_EVENT_SIZE`] bytes are given.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b = b.get(..GPIO_EVENT_SIZE)?;
        let u32_at = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[..8]);
        let mut padding = [0u32; 6];
        for (k, p) in padding.iter_mut().enumerate() {
            *p = u32_at(24 + 4 * k);
        }
        Some(GpioLineEvent {
            timestamp_ns: u64::from_ne_bytes(ts),
            id: u32_at(8),
            offset: u32_at(12),
            seqno: u32_at(16),
            line_seqno: u32_at(20),
            padding,
        })
    }

    /// The record as the kernel would write it (for tests and recordings).
    pub fn to_bytes(&self) -> [u8; GPIO_EVENT_SIZE] {
        let mut b = [0u8; GPIO_EVENT_SIZE];
        b[..8].copy_from_slice(&self.timestamp_ns.to_ne_bytes());
        let words = [self.id, self.offset, self.seqno, self.line_seqno];
        for (k, w) in words.iter().chain(self.padding.iter()).enumerate() {
            b[8 + 4 * k..12 + 4 * k].copy_from_slice(&w.to_ne_bytes());
        }
        b
    }
}

/// What `GPIO_GET_CHIPINFO_IOCTL` says about a chip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpioChipInfo {
    pub name: String,
    pub label: String,
    pub lines: u32,
}

fn c_text(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The chip's name, label and number of lines; `ENOTTY` when `fd` is not a
/// GPIO chip.
pub fn gpio_chip_info(fd: RawFd) -> io::Result<GpioChipInfo> {
    let mut info = ChipInfo {
        name: [0; NAME],
        label: [0; NAME],
        lines: 0,
    };
    // SAFETY: the kernel writes at most size_of::<ChipInfo>() bytes (the size
    // encoded in the request) into `info`, which lives across the call.
    let r = unsafe { libc::ioctl(fd, GET_CHIPINFO as _, &mut info as *mut ChipInfo) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(GpioChipInfo {
        name: c_text(&info.name),
        label: c_text(&info.label),
        lines: info.lines,
    })
}

/// Requests one line of the chip open on `chip_fd` with `flags`
/// (`GPIO_FLAG_*`); the request's file descriptor (read events from it, or
/// set an output's value). `consumer` is shown by `gpioinfo`.
pub fn gpio_request_line(
    chip_fd: RawFd,
    offset: u32,
    flags: u64,
    consumer: &str,
    event_buffer_size: u32,
) -> io::Result<OwnedFd> {
    let attr = ConfigAttribute {
        attr: LineAttribute {
            id: 0,
            padding: 0,
            value: 0,
        },
        mask: 0,
    };
    let mut req = LineRequest {
        offsets: [0; LINES_MAX],
        consumer: [0; NAME],
        config: LineConfig {
            flags,
            num_attrs: 0,
            padding: [0; 5],
            attrs: [attr; ATTRS_MAX],
        },
        num_lines: 1,
        event_buffer_size,
        padding: [0; 5],
        fd: -1,
    };
    req.offsets[0] = offset;
    for (d, s) in req.consumer.iter_mut().zip(consumer.bytes().take(NAME - 1)) {
        *d = s;
    }
    // SAFETY: the kernel reads and writes back size_of::<LineRequest>() bytes
    // of `req`, which lives across the call.
    let r = unsafe { libc::ioctl(chip_fd, V2_GET_LINE as _, &mut req as *mut LineRequest) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    if req.fd < 0 {
        return Err(io::Error::other("GPIO_V2_GET_LINE_IOCTL returned no fd"));
    }
    // SAFETY: on success the kernel gave us this new descriptor; we own it.
    Ok(unsafe { OwnedFd::from_raw_fd(req.fd) })
}

/// Sets the (single) output line of request `fd` high or low.
pub fn gpio_set_value(fd: RawFd, high: bool) -> io::Result<()> {
    let mut v = LineValues {
        bits: u64::from(high),
        mask: 1,
    };
    // SAFETY: the kernel reads (and may write back) size_of::<LineValues>()
    // bytes of `v`, which lives across the call.
    let r = unsafe { libc::ioctl(fd, V2_SET_VALUES as _, &mut v as *mut LineValues) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Blocks until the request `fd` has events, and reads as many whole
/// records as fit into `buf`; their number. One `read`, no allocation. A
/// signal interrupting the wait gives `ErrorKind::Interrupted` (so a stop
/// can end it); end of file gives 0; a read that is not a whole number of
/// records is an error.
pub fn gpio_read_events(fd: RawFd, buf: &mut [GpioLineEvent]) -> io::Result<usize> {
    let len = std::mem::size_of_val(buf);
    // SAFETY: reads at most `len` bytes into `buf`, which is that long and
    // lives across the call; every bit pattern is a valid GpioLineEvent
    // (plain integers).
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), len) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let n = n as usize;
    if n % GPIO_EVENT_SIZE != 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("read {n} bytes, not a whole number of {GPIO_EVENT_SIZE}-byte events"),
        ));
    }
    Ok(n / GPIO_EVENT_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    fn request_numbers() {
        // As computed by <linux/gpio.h> (the same on 32- and 64-bit).
        assert_eq!(GET_CHIPINFO, 0x8044_b401);
        assert_eq!(V2_GET_LINE, 0xc250_b407);
        assert_eq!(V2_SET_VALUES, 0xc010_b40f);
    }

    #[test]
    fn flags_and_edges_are_the_uapis() {
        // <linux/gpio.h>: enum gpio_v2_line_flag, enum gpio_v2_line_event_id.
        assert_eq!(
            [
                GPIO_FLAG_INPUT,
                GPIO_FLAG_OUTPUT,
                GPIO_FLAG_EDGE_RISING,
                GPIO_FLAG_EDGE_FALLING,
                GPIO_FLAG_EVENT_CLOCK_REALTIME,
                GPIO_FLAG_EVENT_CLOCK_HTE,
            ],
            [0x4, 0x8, 0x10, 0x20, 0x800, 0x1000]
        );
        assert_eq!((GPIO_EVENT_RISING_EDGE, GPIO_EVENT_FALLING_EDGE), (1, 2));
    }

    #[test]
    fn every_byte_of_a_record_lands_in_its_field() {
        let bytes: Vec<u8> = (1..=48).collect();
        let e = GpioLineEvent::from_bytes(&bytes).unwrap();
        let word = |i: u8| u32::from_ne_bytes([i, i + 1, i + 2, i + 3]);
        assert_eq!(e.timestamp_ns, u64::from_ne_bytes([1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(
            [e.id, e.offset, e.seqno, e.line_seqno],
            [word(9), word(13), word(17), word(21)]
        );
        assert_eq!(
            e.padding,
            [word(25), word(29), word(33), word(37), word(41), word(45)]
        );
        assert_eq!(e.to_bytes().to_vec(), bytes);
    }

    #[test]
    fn names_end_at_their_first_nul() {
        assert_eq!(c_text(b"gpiochip0\0\0stale"), "gpiochip0");
        assert_eq!(c_text(b"no-nul"), "no-nul");
        assert_eq!(c_text(b"\0x"), "");
    }

    #[test]
    fn records_round_trip() {
        let e = GpioLineEvent {
            timestamp_ns: 123_456_789_012,
            id: GPIO_EVENT_FALLING_EDGE,
            offset: 17,
            seqno: 5,
            line_seqno: 5,
            padding: [0; 6],
        };
        assert_eq!(GpioLineEvent::from_bytes(&e.to_bytes()), Some(e));
        assert_eq!(GpioLineEvent::from_bytes(&[0u8; 47]), None);
    }

    /// A FIFO stands in for the line request: it carries the records the
    /// kernel would write.
    #[test]
    fn reads_records_from_a_fake_request() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("gpio");
        let cp = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(cp.as_ptr(), 0o600) }, 0);
        let ev = |k: u32| GpioLineEvent {
            timestamp_ns: 1_000 * u64::from(k),
            id: GPIO_EVENT_RISING_EDGE,
            offset: 3,
            seqno: k,
            line_seqno: k,
            padding: [0; 6],
        };
        let p2 = p.clone();
        let writer = std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(p2).unwrap();
            let mut all = Vec::new();
            for k in [1, 2, 4] {
                all.extend_from_slice(&ev(k).to_bytes());
            }
            f.write_all(&all).unwrap();
            // A torn record: not a whole event.
            f.write_all(&[0u8; 10]).unwrap();
        });
        let f = std::fs::File::open(&p).unwrap();
        writer.join().unwrap();
        let mut buf = [GpioLineEvent::default(); 3];
        assert_eq!(gpio_read_events(f.as_raw_fd(), &mut buf).unwrap(), 3);
        assert_eq!(buf, [ev(1), ev(2), ev(4)]);
        assert_eq!(
            gpio_read_events(f.as_raw_fd(), &mut buf)
                .unwrap_err()
                .kind(),
            io::ErrorKind::InvalidData
        );
        assert_eq!(gpio_read_events(f.as_raw_fd(), &mut buf).unwrap(), 0);
        // A FIFO is no GPIO chip: ENOTTY from the kernel. qemu's user-mode
        // emulation (the ARM CI) answers ioctls it does not know with ENOSYS.
        let refused = |e: io::Error| {
            let code = e.raw_os_error();
            code == Some(libc::ENOTTY)
                || (!cfg!(target_arch = "x86_64") && code == Some(libc::ENOSYS))
        };
        assert!(refused(gpio_chip_info(f.as_raw_fd()).unwrap_err()));
        assert!(refused(
            gpio_request_line(f.as_raw_fd(), 0, GPIO_FLAG_INPUT, "t", 0).unwrap_err()
        ));
        assert!(refused(gpio_set_value(f.as_raw_fd(), true).unwrap_err()));
    }
}
