//! The decision log's writer: a thread of its own, so that a slow disk
//! never holds up forwarding. The bridge hands it filled buffers; it writes
//! them in order and hands the emptied buffers back for reuse.

use std::io::{self, Write};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Buffers in the writer's queue before the bridge waits for it (a few
/// hundred ms of log at full rate: back-pressure, not unbounded memory).
const QUEUE: usize = 64;

/// The writer thread's handle.
pub struct LogWriter {
    tx: Option<SyncSender<String>>,
    spare: Receiver<String>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl LogWriter {
    /// Start a thread writing to `file`.
    pub fn start(file: std::fs::File) -> io::Result<LogWriter> {
        let (tx, rx) = sync_channel::<String>(QUEUE);
        let (back, spare) = channel::<String>();
        let thread = std::thread::Builder::new()
            .name("dtnc-emu-log".into())
            .spawn(move || -> io::Result<()> {
                block_stop_signals();
                let mut file = file;
                for buf in rx {
                    file.write_all(buf.as_bytes())?;
                    // the bridge may have stopped taking them back
                    let _ = back.send(buf);
                }
                file.flush()
            })?;
        Ok(LogWriter {
            tx: Some(tx),
            spare,
            thread: Some(thread),
        })
    }

    /// An empty buffer to write the next lines into (a returned one when
    /// there is one).
    pub fn spare(&self) -> String {
        self.spare
            .try_recv()
            .unwrap_or_else(|_| String::with_capacity(1 << 18))
    }

    /// Queue a buffer of whole lines for writing; waits only when the
    /// writer is far behind. An error means the writer stopped (its error
    /// is reported by [`LogWriter::finish`]).
    pub fn write(&mut self, buf: String) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        match &self.tx {
            Some(tx) => tx
                .send(buf)
                .map_err(|_| io::Error::other("the decision log writer stopped")),
            None => Err(io::Error::other("the decision log is closed")),
        }
    }

    /// Write what is queued, flush and stop the thread.
    pub fn finish(&mut self) -> io::Result<()> {
        self.tx = None;
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| io::Error::other("the decision log writer panicked"))?,
            None => Ok(()),
        }
    }
}

/// Leave SIGINT and SIGTERM to the bridge's thread, so that they interrupt
/// its wait at once.
fn block_stop_signals() {
    // SAFETY: a signal set built with the libc helpers, applied to this
    // thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
