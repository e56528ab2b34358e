//! The TCP clients of the soak, plain `std::net` threads, one connection each: normal echo
//! clients (every echo compared), slow clients (a byte every 250 ms, never a whole frame),
//! and floods (write as fast as they can, never read).

use crate::xorshift::XorShift;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Which listener a client talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Line-framed, with a frame deadline, reading paused on write high.
    Lines,
    /// Raw, with a minimum receive rate and a small write maximum, never paused.
    Raw,
}

/// How a client behaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Slow,
    Flood,
}

/// What one client did.
#[derive(Clone, Debug)]
pub struct ClientRecord {
    /// Connection order within the run.
    pub seq: u64,
    pub kind: Kind,
    pub side: Side,
    /// Its local address (the server's `peer`), once connected.
    pub local: Option<SocketAddr>,
    /// The listener's address.
    pub server: SocketAddr,
    pub echoes_ok: u64,
    pub echoes_bad: u64,
    /// A normal client finished its exchanges; a slow one saw the server close.
    pub completed: bool,
    /// A flood's write blocked for [`HELD_BACK`]: backpressure held it.
    pub held_back: bool,
    pub bytes_written: u64,
    pub error: Option<String>,
}

/// A flood that cannot write for this long is held back.
const HELD_BACK: Duration = Duration::from_secs(1);
/// A slow client's pause between two bytes.
pub const TRICKLE: Duration = Duration::from_millis(250);
/// The longest a slow client waits to be closed, or a normal client for an echo.
const PATIENCE: Duration = Duration::from_secs(20);
/// What a flood writes at most.
const FLOOD_CAP: u64 = 512 * 1024 * 1024;

/// Runs one client against `addr` and says what happened.
pub fn run(seq: u64, kind: Kind, side: Side, addr: SocketAddr, rng: XorShift) -> ClientRecord {
    let mut r = ClientRecord {
        seq,
        kind,
        side,
        local: None,
        server: addr,
        echoes_ok: 0,
        echoes_bad: 0,
        completed: false,
        held_back: false,
        bytes_written: 0,
        error: None,
    };
    let stream = match TcpStream::connect(addr) {
        Ok(s) => s,
        Err(e) => {
            r.error = Some(format!("connect: {e}"));
            return r;
        }
    };
    r.local = stream.local_addr().ok();
    let outcome = match (kind, side) {
        (Kind::Normal, Side::Lines) => normal_lines(stream, rng, &mut r),
        (Kind::Normal, Side::Raw) => normal_raw(stream, rng, &mut r),
        (Kind::Slow, _) => slow(stream, &mut r),
        (Kind::Flood, _) => flood(stream, side, &mut r),
    };
    if let Err(e) = outcome {
        r.error = Some(e.to_string());
    }
    r
}

fn payload(rng: &mut XorShift, min: u64, max: u64) -> Vec<u8> {
    let len = min + rng.below(max - min + 1);
    (0..len).map(|_| b'a' + rng.below(26) as u8).collect()
}

fn normal_lines(stream: TcpStream, mut rng: XorShift, r: &mut ClientRecord) -> std::io::Result<()> {
    stream.set_read_timeout(Some(PATIENCE))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    for _ in 0..1 + rng.below(30) {
        let mut sent = payload(&mut rng, 1, 2000);
        sent.push(b'\n');
        writer.write_all(&sent)?;
        r.bytes_written += sent.len() as u64;
        line.clear();
        reader.read_until(b'\n', &mut line)?;
        if line == sent {
            r.echoes_ok += 1;
        } else {
            r.echoes_bad += 1;
        }
    }
    r.completed = true;
    writer.shutdown(Shutdown::Write)?;
    // The server closes after its last echo: read to the end of stream.
    line.clear();
    reader.read_to_end(&mut line)?;
    if !line.is_empty() {
        r.echoes_bad += 1;
    }
    Ok(())
}

fn normal_raw(
    mut stream: TcpStream,
    mut rng: XorShift,
    r: &mut ClientRecord,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(PATIENCE))?;
    let mut back = Vec::new();
    for _ in 0..1 + rng.below(30) {
        let sent = payload(&mut rng, 100, 3000);
        stream.write_all(&sent)?;
        r.bytes_written += sent.len() as u64;
        back.resize(sent.len(), 0);
        stream.read_exact(&mut back)?;
        if back == sent {
            r.echoes_ok += 1;
        } else {
            r.echoes_bad += 1;
        }
    }
    r.completed = true;
    stream.shutdown(Shutdown::Write)?;
    back.clear();
    stream.read_to_end(&mut back)?;
    if !back.is_empty() {
        r.echoes_bad += 1;
    }
    Ok(())
}

/// A byte every [`TRICKLE`], never a line end, until the server closes. Echoes (on the
/// raw listener) are read without waiting, so they do not speed the trickle up.
fn slow(mut stream: TcpStream, r: &mut ClientRecord) -> std::io::Result<()> {
    stream.set_nonblocking(true)?;
    let started = Instant::now();
    let mut buf = [0u8; 64];
    while started.elapsed() < PATIENCE {
        if stream.write(b"s").is_err() {
            r.completed = true;
            return Ok(());
        }
        r.bytes_written += 1;
        std::thread::sleep(TRICKLE);
        loop {
            match stream.read(&mut buf) {
                // The server closed (or reset) the connection: what a slow client must see.
                Ok(0) => {
                    r.completed = true;
                    return Ok(());
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    r.completed = true;
                    return Ok(());
                }
            }
        }
    }
    Ok(())
}

/// Writes 64 KiB blocks (lines of 1,000 bytes on the line listener), never reads; stops
/// when held back (line listener), when the connection breaks, or at [`FLOOD_CAP`].
fn flood(mut stream: TcpStream, side: Side, r: &mut ClientRecord) -> std::io::Result<()> {
    stream.set_write_timeout(Some(HELD_BACK))?;
    let mut block = vec![b'f'; 64 * 1024];
    if side == Side::Lines {
        for i in (999..block.len()).step_by(1000) {
            block[i] = b'\n';
        }
    }
    let started = Instant::now();
    while r.bytes_written < FLOOD_CAP && started.elapsed() < PATIENCE {
        match stream.write(&block) {
            Ok(n) => r.bytes_written += n as u64,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                r.held_back = true;
                // The line listener pauses reading: held back is the end of it. The raw one
                // never pauses: keep writing until it closes at its write maximum.
                if side == Side::Lines {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    r.completed = true;
    // Dropped with unread echoes: the kernel resets the connection.
    Ok(())
}
