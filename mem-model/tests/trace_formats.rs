//! Trace formats: round trips, and one clear message for every kind of bad input.

use mem_model::trace::binary::{HEADER_LEN, RECORD_LEN};
use mem_model::trace::{
    BinaryReader, BinaryWriter, DramSim3Reader, RamulatorReader, TimeBase, TraceError, TraceRecord,
    TraceSource, dramsim3, ramulator,
};
use proptest::prelude::*;
use std::io::{Cursor, Read};

/// Every record of `s`, or the first error's message.
fn drain(s: &mut dyn TraceSource) -> Result<Vec<TraceRecord>, String> {
    let mut out = Vec::new();
    while let Some(r) = s.next_record().map_err(|e| e.to_string())? {
        out.push(r);
    }
    Ok(out)
}

fn dramsim3_err(text: &str) -> String {
    drain(&mut DramSim3Reader::new(text.as_bytes(), "t.trace")).expect_err("should fail")
}

fn ramulator_err(text: &str) -> String {
    drain(&mut RamulatorReader::new(text.as_bytes(), "t.trace")).expect_err("should fail")
}

fn binary(records: &[TraceRecord], base: TimeBase) -> Vec<u8> {
    let mut w = BinaryWriter::new(Cursor::new(Vec::new()), base).unwrap();
    for r in records {
        w.write(r).unwrap();
    }
    assert_eq!(w.records(), records.len() as u64);
    w.finish().unwrap().into_inner()
}

fn binary_read(bytes: &[u8]) -> Result<Vec<TraceRecord>, String> {
    let mut r = BinaryReader::new(bytes, "t.bin").map_err(|e| e.to_string())?;
    drain(&mut r)
}

fn sample() -> Vec<TraceRecord> {
    vec![
        TraceRecord::read(0x1f40, 0),
        TraceRecord::write(0x2000, 3),
        TraceRecord { addr: u64::MAX - 63, write: false, bytes: Some(64), time: 1 << 40, non_temporal: true },
        TraceRecord { addr: 0, write: true, bytes: Some(65535), time: 7, non_temporal: false },
    ]
}

#[test]
fn dramsim3_round_trip() {
    let recs: Vec<TraceRecord> =
        sample().into_iter().map(|r| TraceRecord { bytes: None, non_temporal: false, ..r }).collect();
    let mut text = Vec::new();
    for r in &recs {
        dramsim3::write_record(&mut text, r).unwrap();
    }
    let mut reader = DramSim3Reader::new(&text[..], "t.trace");
    assert_eq!(reader.time_base(), TimeBase::MemoryCycles);
    assert_eq!(drain(&mut reader).unwrap(), recs);
}

#[test]
fn ramulator_round_trip() {
    let recs: Vec<TraceRecord> = sample()
        .into_iter()
        .map(|r| TraceRecord { bytes: None, non_temporal: false, time: 0, ..r })
        .collect();
    let mut text = Vec::new();
    for r in &recs {
        ramulator::write_record(&mut text, r).unwrap();
    }
    let mut reader = RamulatorReader::new(&text[..], "t.trace");
    assert_eq!(reader.time_base(), TimeBase::Untimed);
    assert_eq!(drain(&mut reader).unwrap(), recs);
}

#[test]
fn binary_round_trip_each_time_base() {
    for base in [TimeBase::Untimed, TimeBase::Picoseconds, TimeBase::MemoryCycles] {
        let bytes = binary(&sample(), base);
        assert_eq!(bytes.len() as u64, HEADER_LEN + 4 * RECORD_LEN + 8);
        let mut r = BinaryReader::new(&bytes[..], "t.bin").unwrap();
        assert_eq!(r.time_base(), base);
        assert_eq!(r.len_hint(), Some(4));
        let got = drain(&mut r).unwrap();
        let want: Vec<TraceRecord> = sample()
            .into_iter()
            .map(|x| if base == TimeBase::Untimed { TraceRecord { time: 0, ..x } } else { x })
            .collect();
        assert_eq!(got, want);
    }
}

proptest! {
    #[test]
    fn binary_round_trips_any_records(
        recs in proptest::collection::vec(
            (any::<u64>(), any::<bool>(), proptest::option::of(1u32..=65535), any::<u64>(), any::<bool>()),
            0..64,
        )
    ) {
        let recs: Vec<TraceRecord> = recs
            .into_iter()
            .map(|(addr, write, bytes, time, non_temporal)| TraceRecord { addr, write, bytes, time, non_temporal })
            .collect();
        let bytes = binary(&recs, TimeBase::Picoseconds);
        prop_assert_eq!(binary_read(&bytes).unwrap(), recs);
    }

    #[test]
    fn text_readers_never_panic(text in "[ -~\\n\\t]{0,200}") {
        let _ = drain(&mut DramSim3Reader::new(text.as_bytes(), "t"));
        let _ = drain(&mut RamulatorReader::new(text.as_bytes(), "t"));
    }

    #[test]
    fn binary_reader_never_panics(mut bytes in proptest::collection::vec(any::<u8>(), 0..200), magic in any::<bool>()) {
        if magic && bytes.len() >= 10 {
            bytes[..8].copy_from_slice(b"DAETRACE");
            bytes[8] = 1;
            bytes[9] = 0;
        }
        let _ = binary_read(&bytes);
    }
}

#[test]
fn dramsim3_parse_errors_name_file_line_and_text() {
    assert_eq!(
        dramsim3_err("0x40 READ 1\n0x80 RD 2\n"),
        "t.trace:2: unknown request kind \"RD\": expected READ or WRITE (also read, write, P_MEM_RD, P_MEM_WR, BOFF) \
         in \"0x80 RD 2\""
    );
    assert_eq!(
        dramsim3_err("# comment\n\n0xZZ READ 1\n"),
        "t.trace:3: invalid address \"0xZZ\": expected a hexadecimal number of at most 64 bits, such as 0x1f40 \
         in \"0xZZ READ 1\""
    );
    assert_eq!(
        dramsim3_err("0x40 READ -5\n"),
        "t.trace:1: invalid cycle \"-5\": expected a decimal count of memory cycles in \"0x40 READ -5\""
    );
    assert_eq!(
        dramsim3_err("0x40 READ\n"),
        "t.trace:1: expected 3 fields (ADDR READ|WRITE CYCLE), found 2 in \"0x40 READ\""
    );
    assert_eq!(
        dramsim3_err("0x40 READ 1 extra\n"),
        "t.trace:1: expected 3 fields (ADDR READ|WRITE CYCLE), found 4 in \"0x40 READ 1 extra\""
    );
    assert_eq!(
        dramsim3_err("0x10000000000000000 READ 1\n"),
        "t.trace:1: invalid address \"0x10000000000000000\": expected a hexadecimal number of at most 64 bits, \
         such as 0x1f40 in \"0x10000000000000000 READ 1\""
    );
}

#[test]
fn ramulator_parse_errors_name_file_line_and_text() {
    assert_eq!(
        ramulator_err("LD 0x40\nLOAD 0x80\n"),
        "t.trace:2: unknown request kind \"LOAD\": expected LD or ST in \"LOAD 0x80\""
    );
    assert_eq!(
        ramulator_err("ST 12ab\n"),
        "t.trace:1: invalid address \"12ab\": expected 0x then hexadecimal digits, or decimal digits (at most 64 bits) \
         in \"ST 12ab\""
    );
    assert_eq!(ramulator_err("LD\n"), "t.trace:1: expected 2 fields (LD|ST ADDR), found 1 in \"LD\"");
    assert_eq!(
        ramulator_err("0x40 READ 1\n"),
        "t.trace:1: expected 2 fields (LD|ST ADDR), found 3 in \"0x40 READ 1\""
    );
}

#[test]
fn a_reader_stops_after_its_first_error() {
    let mut r = RamulatorReader::new(&b"LD 0x40\nbad\nLD 0x80\n"[..], "t");
    assert!(r.next_record().unwrap().is_some());
    assert!(matches!(r.next_record(), Err(TraceError::Parse { .. })));
    assert_eq!(r.next_record().unwrap(), None);
}

#[test]
fn a_line_without_end_costs_bounded_memory() {
    // An endless line (no newline ever) must end in an error, not in reading it all.
    let endless = std::io::repeat(b'7');
    let mut r = DramSim3Reader::new(std::io::BufReader::new(endless), "endless");
    let e = r.next_record().unwrap_err().to_string();
    assert!(e.starts_with("endless:1: the line is longer than 4096 bytes in \"7777"), "{e}");
}

#[test]
fn text_readers_stream_long_traces() {
    /// A million-line Ramulator trace made on the fly, never held in memory.
    struct Lines {
        i: u64,
        n: u64,
        line: Vec<u8>,
        pos: usize,
    }
    impl Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pos == self.line.len() {
                if self.i == self.n {
                    return Ok(0);
                }
                self.line =
                    format!("{} {:#x}\n", if self.i.is_multiple_of(4) { "ST" } else { "LD" }, self.i * 64)
                        .into_bytes();
                self.pos = 0;
                self.i += 1;
            }
            let n = buf.len().min(self.line.len() - self.pos);
            buf[..n].copy_from_slice(&self.line[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }
    let n = 1_000_000;
    let mut r = RamulatorReader::new(std::io::BufReader::new(Lines { i: 0, n, line: vec![], pos: 0 }), "gen");
    let (mut count, mut writes, mut last) = (0u64, 0u64, 0);
    while let Some(rec) = r.next_record().unwrap() {
        count += 1;
        writes += u64::from(rec.write);
        last = rec.addr;
    }
    assert_eq!((count, writes, last), (n, n / 4, (n - 1) * 64));
}

#[test]
fn binary_wrong_magic() {
    let mut bytes = binary(&sample(), TimeBase::Untimed);
    bytes[0] = b'X';
    assert_eq!(
        binary_read(&bytes).unwrap_err(),
        "t.bin: not a dae-sim binary trace: the file starts with \"XAETRACE\", expected \"DAETRACE\""
    );
    // A text trace given as binary is named as such, not as a truncated file.
    assert_eq!(
        binary_read(b"LD 0x40\n").unwrap_err(),
        "t.bin: not a dae-sim binary trace: the file starts with \"LD 0x40\\n\", expected \"DAETRACE\""
    );
    assert_eq!(
        binary_read(b"").unwrap_err(),
        "t.bin: not a dae-sim binary trace: the file starts with \"\", expected \"DAETRACE\""
    );
}

#[test]
fn binary_wrong_version() {
    let mut bytes = binary(&sample(), TimeBase::Untimed);
    bytes[8] = 2;
    assert_eq!(
        binary_read(&bytes).unwrap_err(),
        "t.bin: binary trace format version 2 is not supported (this build reads version 1)"
    );
}

#[test]
fn binary_bad_header_fields() {
    let mut bytes = binary(&sample(), TimeBase::Untimed);
    bytes[10] = 3;
    assert_eq!(
        binary_read(&bytes).unwrap_err(),
        "t.bin: byte 10: invalid header: flags 0x0003: time unit 3 is undefined (0 untimed, 1 ps, 2 memory cycles)"
    );
    bytes[10] = 0x10;
    assert_eq!(
        binary_read(&bytes).unwrap_err(),
        "t.bin: byte 10: invalid header: flags 0x0010: bits 2-15 are reserved and must be 0"
    );
    bytes[10] = 0;
    bytes[13] = 1;
    assert_eq!(
        binary_read(&bytes).unwrap_err(),
        "t.bin: byte 12: invalid header: bytes 12-15 are reserved and must be 0"
    );
}

#[test]
fn binary_truncated_anywhere() {
    let bytes = binary(&sample(), TimeBase::Picoseconds);
    assert_eq!(
        binary_read(&bytes[..20]).unwrap_err(),
        "t.bin: truncated at byte 20: the header needs 4 more bytes"
    );
    assert_eq!(
        binary_read(&bytes[..24 + 24 + 10]).unwrap_err(),
        "t.bin: truncated at byte 58: record 1 of 4 needs 14 more bytes"
    );
    let len = bytes.len();
    assert_eq!(
        binary_read(&bytes[..len - 3]).unwrap_err(),
        format!("t.bin: truncated at byte {}: the checksum needs 3 more bytes", len - 3)
    );
    // Every shorter prefix fails (and none panics).
    for cut in 0..len {
        assert!(binary_read(&bytes[..cut]).is_err(), "prefix of {cut} bytes");
    }
}

#[test]
fn binary_bad_checksum() {
    let mut bytes = binary(&sample(), TimeBase::Picoseconds);
    // Flip a bit of record 1's time: every field stays valid, only the sum disagrees.
    bytes[24 + 24 + 8] ^= 0x04;
    let e = binary_read(&bytes).unwrap_err();
    assert!(e.starts_with("t.bin: byte 120: checksum mismatch: the file stores 0x"), "{e}");
    assert!(e.contains(", its records hash to 0x"), "{e}");
    let mut r = BinaryReader::new(&bytes[..], "t.bin").unwrap();
    for _ in 0..4 {
        r.next_record().unwrap();
    }
    assert!(matches!(r.next_record(), Err(TraceError::BadChecksum { .. })));
}

#[test]
fn binary_bad_record_fields() {
    let bytes = binary(&sample(), TimeBase::Picoseconds);
    let mut b = bytes.clone();
    b[24 + 24 + 18] = 2;
    assert_eq!(
        binary_read(&b).unwrap_err(),
        "t.bin: byte 48: record 1: kind 2 is undefined (0 read, 1 write)"
    );
    let mut b = bytes.clone();
    b[24 + 19] = 0x82;
    assert_eq!(
        binary_read(&b).unwrap_err(),
        "t.bin: byte 24: record 0: hint bits 0x82 are undefined (bit 0: non-temporal)"
    );
    let mut b = bytes.clone();
    b[24 + 21] = 1;
    assert_eq!(binary_read(&b).unwrap_err(), "t.bin: byte 24: record 0: reserved bytes 20-23 must be 0");
}

#[test]
fn binary_trailing_data() {
    let mut bytes = binary(&sample(), TimeBase::Picoseconds);
    let len = bytes.len();
    bytes.push(0);
    assert_eq!(
        binary_read(&bytes).unwrap_err(),
        format!("t.bin: byte {len}: unexpected data after the checksum (the header promises 4 records)")
    );
}

#[test]
fn binary_files_on_disk() {
    let tmp = tempfile::Builder::new().prefix("mem-model-trace-").tempdir().unwrap();
    let dir = tmp.path();
    let path = dir.join("t.bin");
    let mut w = BinaryWriter::create(&path, TimeBase::MemoryCycles).unwrap();
    for r in sample() {
        w.write(&r).unwrap();
    }
    w.finish().unwrap();
    let mut r = BinaryReader::open(&path).unwrap();
    assert_eq!(drain(&mut r).unwrap(), sample());
    let missing = dir.join("missing.bin");
    let e = BinaryReader::open(&missing).err().unwrap().to_string();
    assert!(e.starts_with(&format!("{}: cannot read: ", missing.display())), "{e}");
    tmp.close().unwrap();
}
