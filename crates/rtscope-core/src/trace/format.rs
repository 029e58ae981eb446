//! Event formats (`events/<system>/<event>/format`) and the ring-buffer page
//! header (`events/header_page`), as tracefs describes them.

/// One field of an event record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// Its offset in the record, bytes.
    pub offset: usize,
    /// Its size, bytes.
    pub size: usize,
    /// Whether it is signed.
    pub signed: bool,
    /// `__data_loc`: a u32 whose low 16 bits are the offset of the data in
    /// the record and high 16 bits its length.
    pub data_loc: bool,
}

/// An event's id and fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventFormat {
    /// The event's name (`sched_switch`, ...).
    pub name: String,
    /// Its id, as the records carry it.
    pub id: u16,
    /// Its fields.
    pub fields: Vec<Field>,
}

fn num(part: &str, key: &str) -> Option<usize> {
    part.trim().strip_prefix(key)?.trim().parse().ok()
}

/// Parses a `field:...;\toffset:N;\tsize:N;\tsigned:N;` line.
pub fn parse_field(line: &str) -> Option<Field> {
    let line = line.trim();
    let decl = line.strip_prefix("field:")?;
    let mut parts = decl.split(';');
    let d = parts.next()?.trim();
    let (mut offset, mut size, mut signed) = (None, None, false);
    for p in parts {
        if let Some(v) = num(p, "offset:") {
            offset = Some(v);
        } else if let Some(v) = num(p, "size:") {
            size = Some(v);
        } else if let Some(v) = num(p, "signed:") {
            signed = v != 0;
        }
    }
    let last = d.split_whitespace().last()?;
    let name = last.split('[').next()?.trim_start_matches('*').to_string();
    Some(Field {
        name,
        offset: offset?,
        size: size?,
        signed,
        data_loc: d.starts_with("__data_loc"),
    })
}

/// Parses an event's `format` file.
pub fn parse_format(text: &str) -> Option<EventFormat> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for l in text.lines() {
        let t = l.trim();
        if let Some(v) = t.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = t.strip_prefix("ID:") {
            id = v.trim().parse().ok();
        } else if let Some(f) = parse_field(t) {
            fields.push(f);
        }
    }
    Some(EventFormat {
        name: name?,
        id: id?,
        fields,
    })
}

impl EventFormat {
    /// The field called `name`, if the event has one.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Where a page's commit word and data are (from `events/header_page`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the page's commit word, bytes.
    pub commit_offset: usize,
    /// Size of the commit word, bytes.
    pub commit_size: usize,
    /// Offset of the first record, bytes.
    pub data_offset: usize,
}

impl Default for PageLayout {
    /// The 64-bit layout: u64 timestamp, 8-byte commit, data at 16.
    fn default() -> Self {
        PageLayout {
            commit_offset: 8,
            commit_size: 8,
            data_offset: 16,
        }
    }
}

/// Parses `events/header_page`.
pub fn parse_header_page(text: &str) -> Option<PageLayout> {
    let fields: Vec<Field> = text
        .lines()
        .filter_map(|l| parse_field(&l.trim().replace("field: ", "field:")))
        .collect();
    let commit = fields.iter().find(|f| f.name == "commit")?;
    let data = fields.iter().find(|f| f.name == "data")?;
    Some(PageLayout {
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
    })
}

/// Reads an unsigned little-endian integer of `size` bytes at `off` (0 when out of range).
pub fn read_uint(data: &[u8], off: usize, size: usize) -> u64 {
    let Some(b) = data.get(off..off + size) else {
        return 0;
    };
    let mut v = 0u64;
    for (i, &x) in b.iter().enumerate().take(8) {
        v |= u64::from(x) << (8 * i);
    }
    v
}

/// Reads a field as a signed integer (sign-extended from its size).
pub fn read_int(data: &[u8], f: &Field) -> i64 {
    let v = read_uint(data, f.offset, f.size);
    if f.signed && f.size < 8 && f.size > 0 {
        let shift = 64 - 8 * f.size as u32;
        ((v << shift) as i64) >> shift
    } else {
        v as i64
    }
}

/// Reads a string field: a fixed `char[N]` or a `__data_loc char[]`.
pub fn read_str(data: &[u8], f: &Field) -> String {
    read_cstr(data, f).into_owned()
}

/// [`read_str`], borrowed from the record where it is valid UTF-8.
pub fn read_cstr<'a>(data: &'a [u8], f: &Field) -> std::borrow::Cow<'a, str> {
    let bytes = if f.data_loc {
        let loc = read_uint(data, f.offset, 4);
        let (off, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
        data.get(off..off + len).unwrap_or(&[])
    } else {
        data.get(f.offset..f.offset + f.size).unwrap_or(&[])
    };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const IRQ_ENTRY: &str = "name: irq_handler_entry\nID: 225\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:int irq;\toffset:8;\tsize:4;\tsigned:1;\n\tfield:__data_loc char[] name;\toffset:12;\tsize:4;\tsigned:0;\n\nprint fmt: \"irq=%d name=%s\", REC->irq, __get_str(name)\n";

    #[test]
    fn formats_parse() {
        let f = parse_format(IRQ_ENTRY).unwrap();
        assert_eq!(f.id, 225);
        assert_eq!(f.name, "irq_handler_entry");
        let irq = f.field("irq").unwrap();
        assert_eq!((irq.offset, irq.size, irq.signed), (8, 4, true));
        assert!(f.field("name").unwrap().data_loc);
        let c = parse_field("field:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;").unwrap();
        assert_eq!((c.name.as_str(), c.size), ("prev_comm", 16));
        let h = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(parse_header_page(h).unwrap(), PageLayout::default());
    }

    #[test]
    fn values_read() {
        let mut rec = vec![0u8; 24];
        rec[8..12].copy_from_slice(&(-5i32).to_le_bytes());
        rec[12..16].copy_from_slice(&((4u32 << 16) | 16).to_le_bytes());
        rec[16..20].copy_from_slice(b"eth0");
        let f = parse_format(IRQ_ENTRY).unwrap();
        assert_eq!(read_int(&rec, f.field("irq").unwrap()), -5);
        assert_eq!(read_str(&rec, f.field("name").unwrap()), "eth0");
        assert_eq!(read_uint(&rec, 100, 4), 0);
    }

    #[test]
    fn integers_are_sign_extended_only_when_signed() {
        let field = |size, signed| Field {
            name: "x".into(),
            offset: 0,
            size,
            signed,
            data_loc: false,
        };
        let rec = |v: i64| v.to_le_bytes().to_vec();
        assert_eq!(read_int(&rec(-300), &field(4, true)), -300);
        assert_eq!(read_int(&rec(-300), &field(2, true)), -300);
        assert_eq!(read_int(&rec(-3), &field(1, true)), -3);
        assert_eq!(read_int(&rec(-3), &field(8, true)), -3);
        // Unsigned: the high bit is a value bit.
        assert_eq!(read_int(&rec(-1), &field(4, false)), 0xFFFF_FFFF);
        assert_eq!(read_int(&rec(-1), &field(2, false)), 0xFFFF);
        // A field of no size reads 0.
        assert_eq!(read_int(&rec(-1), &field(0, true)), 0);
    }

    #[test]
    fn header_page_of_a_32_bit_kernel() {
        // armv7: a 4-byte commit word, data at 12.
        let h = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
        assert_eq!(
            parse_header_page(h),
            Some(PageLayout {
                commit_offset: 8,
                commit_size: 4,
                data_offset: 12
            })
        );
        assert_eq!(
            parse_header_page("\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"),
            None
        );
    }
}
