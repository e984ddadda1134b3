//! What the harness hands cfdp-rs, and how it drives its two handlers: the
//! user (indications), the fault hook, the PDU sender (an outbox the run
//! loop empties onto UDP), the countdown provider and the sequence counter.
//!
//! File:line references are to cfdp-rs 0.3.0 (`~/.cargo/registry/src/*/
//! cfdp-rs-0.3.0/`) unless they name spacepackets 0.16.1.

use std::{
    any::Any,
    cell::{Cell, RefCell},
    collections::VecDeque,
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
    rc::Rc,
    sync::Mutex,
    time::{Duration, Instant},
};

use cfdp::{
    dest::DestinationHandler,
    filestore::NativeFilestore,
    lost_segments::LostSegmentsList,
    source::SourceHandler,
    user::{CfdpUser, FileSegmentRecvdParams, MetadataReceivedParams, TransactionFinishedParams},
    EntityType, FaultInfo, GenericSendError, PduOwnedWithInfo, PduSender, RemoteEntityConfig,
    State, StdCountdown, TimerContext, TimerCreator, TransactionId, UserFaultHook,
};
use spacepackets::{
    cfdp::{
        pdu::{finished::DeliveryCode, FileDirectiveType},
        ConditionCode, PduType,
    },
    seq_count::SequenceCounter,
};

use crate::wire::{condition_name, FILE_STATUSES};

pub const IMPLEMENTATION: &str = "cfdp-rs 0.3.0";

/// The payload pattern of specs/cfdp/wire.json (suts/payload.rs), compiled
/// in (the Python harnesses and the tester read the same entry), parsed on
/// first use.
static PAYLOAD: std::sync::LazyLock<crate::payload::Payload> = std::sync::LazyLock::new(|| {
    crate::payload::Payload::from_wire(
        include_str!("../../../../../specs/cfdp/wire.json"),
        "specs/cfdp/wire.json",
    )
});

/// The file's content: `len` octets of the payload pattern.
pub fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(|i| PAYLOAD.byte(i)).collect()
}

fn cond(c: ConditionCode) -> String {
    condition_name(c as u8)
}

// ---------------------------------------------------------------------------
// What cfdp-rs tells its user
// ---------------------------------------------------------------------------

/// The indications and fault-handler calls of the one transaction.
pub struct Observer {
    pub t0: Instant,
    pub role: &'static str,
    pub verbose: bool,
    /// Set once the transaction has ended: what follows is "after the end".
    pub settled: bool,
    pub transaction_seen: bool,
    /// (condition, delivery code, file status) of each
    /// Transaction-Finished.indication.
    pub finished: Vec<(String, String, String)>,
    /// (fault handler, condition) of each fault-hook call.
    pub faults: Vec<(String, String)>,
    pub abandoned: Option<String>,
    pub cancel_condition: Option<String>,
    /// Condition of each EOF PDU cfdp-rs sent (read off the PDU).
    pub eof_sent: Vec<String>,
    pub delivered_bytes: u64,
    pub payload_ok: Option<bool>,
    pub dest_path: Option<PathBuf>,
    pub after_end: Vec<String>,
    /// The transaction ID the Transaction.indication gave the source user:
    /// (source entity, sequence number), the result's told_session.
    pub told: Option<(u64, u64)>,
    /// The File-Segment-Recv.indications the destination user was given
    /// (727.0-B-5 3.4.10), (offset, length) each, the first SEGMENTS_KEPT:
    /// the result's told_segments.
    pub segments: Vec<(u64, u64)>,
}

/// How many File-Segment-Recv.indications a receiver's result reports (as
/// suts/cfdp/common/harnesskit.py's SEGMENTS_KEPT).
pub const SEGMENTS_KEPT: usize = 4096;

impl Observer {
    pub fn new(t0: Instant, role: &'static str, verbose: bool) -> Self {
        Self {
            t0,
            role,
            verbose,
            settled: false,
            transaction_seen: false,
            finished: Vec::new(),
            faults: Vec::new(),
            abandoned: None,
            cancel_condition: None,
            eof_sent: Vec::new(),
            delivered_bytes: 0,
            payload_ok: None,
            dest_path: None,
            after_end: Vec::new(),
            told: None,
            segments: Vec::new(),
        }
    }

    pub fn log(&self, text: &str) {
        let ms = self.t0.elapsed().as_secs_f64() * 1000.0;
        eprintln!("{ms:8.1}ms {} dtnc-cfdprs {text}", self.role);
    }

    pub fn note(&mut self, text: String) {
        if self.settled {
            self.log(&format!("[after the end] {text}"));
            self.after_end.push(text);
        } else {
            self.log(&text);
        }
    }

    fn check_file(&mut self) {
        let Some(path) = self.dest_path.clone() else {
            return;
        };
        match std::fs::read(&path) {
            Ok(data) => {
                self.delivered_bytes = data.len() as u64;
                let ok = data == pattern(data.len() as u64);
                self.payload_ok = Some(ok);
                self.note(format!(
                    "delivered file {}: {} B, payload_ok={ok}",
                    path.display(),
                    data.len()
                ));
            }
            Err(e) => {
                self.payload_ok = Some(false);
                self.note(format!("delivered file {} unreadable: {e}", path.display()));
            }
        }
    }
}

pub type Obs = Rc<RefCell<Observer>>;

/// cfdp-rs's user (user.rs:77-100): records each indication.
pub struct HarnessUser {
    pub obs: Obs,
}

impl CfdpUser for HarnessUser {
    fn transaction_indication(&mut self, id: &TransactionId) {
        let mut o = self.obs.borrow_mut();
        o.transaction_seen = true;
        // the first indication counts, as in the Python harnesses
        let told = (id.source_id().value_const(), id.seq_num().value_const());
        o.told.get_or_insert(told);
        o.note(format!("Transaction.indication ({}, {})", told.0, told.1));
    }

    fn eof_sent_indication(&mut self, _id: &TransactionId) {
        self.obs.borrow_mut().note("EOF-Sent.indication".into());
    }

    fn transaction_finished_indication(&mut self, p: &TransactionFinishedParams) {
        let c = cond(p.condition_code);
        let delivery = if p.delivery_code == DeliveryCode::Complete {
            "data_complete"
        } else {
            "data_incomplete"
        };
        let status = FILE_STATUSES[(p.file_status as u8 & 3) as usize];
        let mut o = self.obs.borrow_mut();
        o.note(format!(
            "Transaction-Finished.indication condition={c} {delivery} {status}"
        ));
        if o.settled {
            return;
        }
        o.transaction_seen = true;
        o.finished
            .push((c.clone(), delivery.to_string(), status.to_string()));
        if c == "no_error" && delivery == "data_complete" {
            o.check_file();
        }
    }

    fn metadata_recvd_indication(&mut self, p: &MetadataReceivedParams) {
        let mut o = self.obs.borrow_mut();
        o.note(format!(
            "Metadata-Recv.indication file_size={} dest={:?}",
            p.file_size, p.dest_file_name
        ));
        if o.settled || p.dest_file_name.is_empty() {
            return;
        }
        o.transaction_seen = true;
        // As the DestinationHandler does (dest.rs:1655-1671): a directory
        // gets the source file's base name appended.
        let mut path = PathBuf::from(p.dest_file_name);
        if path.is_dir() {
            if let Some(name) = std::path::Path::new(p.src_file_name).file_name() {
                path = path.join(name);
            }
        }
        o.dest_path = Some(path);
    }

    fn file_segment_recvd_indication(&mut self, p: &FileSegmentRecvdParams) {
        let mut o = self.obs.borrow_mut();
        let text = || {
            format!(
                "File-Segment-Recv.indication offset={} len={}",
                p.offset, p.length
            )
        };
        if o.verbose {
            o.log(&text());
        }
        if o.settled {
            o.after_end.push(text());
        } else if o.segments.len() < SEGMENTS_KEPT {
            o.segments.push((p.offset, p.length as u64));
        }
    }

    fn report_indication(&mut self, _id: &TransactionId) {
        self.obs.borrow_mut().note("Report.indication".into());
    }

    fn suspended_indication(&mut self, _id: &TransactionId, c: ConditionCode) {
        self.obs
            .borrow_mut()
            .note(format!("Suspended.indication {}", cond(c)));
    }

    fn resumed_indication(&mut self, _id: &TransactionId, progress: u64) {
        self.obs
            .borrow_mut()
            .note(format!("Resumed.indication progress={progress}"));
    }

    fn fault_indication(&mut self, _id: &TransactionId, c: ConditionCode, progress: u64) {
        self.obs
            .borrow_mut()
            .note(format!("Fault.indication {} progress={progress}", cond(c)));
    }

    fn abandoned_indication(&mut self, _id: &TransactionId, c: ConditionCode, progress: u64) {
        self.obs.borrow_mut().note(format!(
            "Abandoned.indication {} progress={progress}",
            cond(c)
        ));
    }

    fn eof_recvd_indication(&mut self, _id: &TransactionId) {
        self.obs.borrow_mut().note("EOF-Recv.indication".into());
    }
}

/// cfdp-rs's fault hook (lib.rs:493-501): the FaultHandler calls one of
/// these with the handler it applied (lib.rs:632-649).
pub struct HarnessFaultHook {
    pub obs: Obs,
}

impl HarnessFaultHook {
    fn record(&mut self, handler: &str, info: FaultInfo) {
        let name = cond(info.condition_code());
        let mut o = self.obs.borrow_mut();
        o.note(format!(
            "fault handler: {handler} for {name} (progress {})",
            info.progress()
        ));
        if o.settled {
            return;
        }
        o.faults.push((handler.to_string(), name.clone()));
        match handler {
            "notice_of_cancellation" => o.cancel_condition = Some(name),
            "abandon" => o.abandoned = Some(name),
            _ => {}
        }
    }
}

impl UserFaultHook for HarnessFaultHook {
    fn notice_of_suspension_cb(&mut self, info: FaultInfo) {
        self.record("notice_of_suspension", info);
    }

    fn notice_of_cancellation_cb(&mut self, info: FaultInfo) {
        self.record("notice_of_cancellation", info);
    }

    fn abandoned_cb(&mut self, info: FaultInfo) {
        self.record("abandon", info);
    }

    fn ignore_cb(&mut self, info: FaultInfo) {
        self.record("ignore", info);
    }
}

// ---------------------------------------------------------------------------
// PDU sender, timers, sequence counter
// ---------------------------------------------------------------------------

/// cfdp-rs's PduSender (lib.rs:720-735): each PDU it builds goes into this
/// queue; the run loop sends each, unchanged, as one UDP datagram.
#[derive(Clone, Default)]
pub struct Outbox(pub Rc<RefCell<VecDeque<Vec<u8>>>>);

impl PduSender for Outbox {
    fn send_pdu(
        &self,
        _pdu_type: PduType,
        _directive: Option<FileDirectiveType>,
        raw_pdu: &[u8],
    ) -> Result<(), GenericSendError> {
        self.0.borrow_mut().push_back(raw_pdu.to_vec());
        Ok(())
    }
}

/// The countdown provider (lib.rs:208-212). NAK and positive-ACK timers last
/// what the remote entity configuration says (TimerContext carries it). The
/// check timer: the DestinationHandler counts its own expiries against
/// RemoteEntityConfig::check_limit (dest.rs:1555-1570), so its timer is one
/// --check-timer-ms; the SourceHandler declares Check Limit Reached at the
/// first expiry of the one check timer it makes after a closure-requested
/// EOF (source.rs:774-787), so that timer lasts the whole limit:
/// (--check-limit + 1) x --check-timer-ms.
pub struct HarnessTimers {
    pub receiving_check: Duration,
    pub sending_check: Duration,
}

impl TimerCreator for HarnessTimers {
    type Countdown = StdCountdown;

    fn create_countdown(&self, ctx: TimerContext) -> StdCountdown {
        match ctx {
            TimerContext::CheckLimit {
                entity_type: EntityType::Sending,
                ..
            } => StdCountdown::new(self.sending_check),
            TimerContext::CheckLimit { .. } => StdCountdown::new(self.receiving_check),
            TimerContext::NakActivity { expiry_time } => StdCountdown::new(expiry_time),
            TimerContext::PositiveAck { expiry_time } => StdCountdown::new(expiry_time),
        }
    }
}

/// The sequence counter: yields --seq-num first. The SourceHandler writes
/// the number in MAX_BIT_WIDTH / 8 octets (source.rs:482-488), so the width
/// is this type's parameter.
pub struct FixedSeq<const W: usize> {
    next: Cell<u64>,
}

impl<const W: usize> FixedSeq<W> {
    pub fn new(first: u64) -> Self {
        Self {
            next: Cell::new(first),
        }
    }
}

impl<const W: usize> SequenceCounter for FixedSeq<W> {
    type Raw = u64;
    const MAX_BIT_WIDTH: usize = W * 8;

    fn get(&self) -> u64 {
        self.next.get()
    }

    fn increment(&self) {
        let mask = if W >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * W)) - 1
        };
        self.next.set(self.next.get().wrapping_add(1) & mask);
    }
}

// ---------------------------------------------------------------------------
// Driving a handler
// ---------------------------------------------------------------------------

/// One call into cfdp-rs failed: its Result's error (the PDU is dropped)
/// or a panic (the entity stops, as an application would).
pub enum CallError {
    Refused { kind: String, text: String },
    Panicked(String),
}

static PANIC_AT: Mutex<String> = Mutex::new(String::new());

/// Remember where a panic happened (the default hook still prints it).
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if let Some(loc) = info.location() {
            if let Ok(mut at) = PANIC_AT.lock() {
                *at = format!("{}:{}", loc.file(), loc.line());
            }
        }
        default(info);
    }));
}

fn panic_text(payload: Box<dyn Any + Send>) -> String {
    let msg = if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic".to_string()
    };
    let at = PANIC_AT.lock().map(|s| s.clone()).unwrap_or_default();
    let at = at
        .rsplit_once("/src/")
        .map(|(_, tail)| format!("src/{tail}"))
        .unwrap_or(at);
    format!("{IMPLEMENTATION} panicked: {msg} at {at}")
}

fn guarded<T, E: std::fmt::Debug + std::fmt::Display>(
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, CallError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => {
            let dbg = format!("{e:?}");
            let kind = dbg
                .split(|c: char| !c.is_alphanumeric() && c != '_')
                .next()
                .unwrap_or("Error")
                .to_string();
            Err(CallError::Refused {
                kind,
                text: e.to_string(),
            })
        }
        Err(payload) => Err(CallError::Panicked(panic_text(payload))),
    }
}

fn guarded_plain<T>(f: impl FnOnce() -> T) -> Result<T, CallError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| CallError::Panicked(panic_text(p)))
}

/// What the run loop needs of a handler.
pub trait Driver {
    /// Insert one received PDU and run the state machine
    /// (`state_machine(user, Some(pdu))`).
    fn insert(&mut self, user: &mut HarnessUser, pdu: &PduOwnedWithInfo) -> Result<u32, CallError>;
    /// Run the state machine without a PDU: timers, the next File Data PDU.
    fn poll(&mut self, user: &mut HarnessUser) -> Result<u32, CallError>;
    fn busy(&self) -> bool;
    /// Cancel.request; None when no transaction is active.
    fn cancel(&mut self, user: &mut HarnessUser) -> Result<Option<bool>, CallError>;
    fn step(&self) -> String;
    fn name(&self) -> &'static str;
}

pub type Source<const W: usize> = SourceHandler<
    Outbox,
    HarnessFaultHook,
    NativeFilestore,
    RemoteEntityConfig,
    HarnessTimers,
    StdCountdown,
    FixedSeq<W>,
>;

pub type Dest = DestinationHandler<
    Outbox,
    HarnessFaultHook,
    NativeFilestore,
    RemoteEntityConfig,
    HarnessTimers,
    StdCountdown,
    LostSegmentsList,
>;

pub struct SourceDriver<const W: usize>(pub Source<W>);

impl<const W: usize> Driver for SourceDriver<W> {
    fn insert(&mut self, user: &mut HarnessUser, pdu: &PduOwnedWithInfo) -> Result<u32, CallError> {
        guarded(|| self.0.state_machine(user, Some(pdu)))
    }

    fn poll(&mut self, user: &mut HarnessUser) -> Result<u32, CallError> {
        guarded(|| self.0.state_machine_no_packet(user))
    }

    fn busy(&self) -> bool {
        self.0.state() != State::Idle
    }

    fn cancel(&mut self, user: &mut HarnessUser) -> Result<Option<bool>, CallError> {
        let Some(id) = self.0.transaction_id() else {
            return Ok(None);
        };
        if !self.busy() {
            return Ok(None);
        }
        guarded(|| self.0.cancel_request(user, &id)).map(Some)
    }

    fn step(&self) -> String {
        format!("{:?}", self.0.step())
    }

    fn name(&self) -> &'static str {
        "SourceHandler"
    }
}

pub struct DestDriver(pub Dest);

impl Driver for DestDriver {
    fn insert(&mut self, user: &mut HarnessUser, pdu: &PduOwnedWithInfo) -> Result<u32, CallError> {
        guarded(|| self.0.state_machine(user, Some(pdu)))
    }

    fn poll(&mut self, user: &mut HarnessUser) -> Result<u32, CallError> {
        guarded(|| self.0.state_machine_no_packet(user))
    }

    fn busy(&self) -> bool {
        self.0.state() != State::Idle
    }

    fn cancel(&mut self, _user: &mut HarnessUser) -> Result<Option<bool>, CallError> {
        let Some(id) = self.0.transaction_id() else {
            return Ok(None);
        };
        if !self.busy() {
            return Ok(None);
        }
        guarded_plain(|| self.0.cancel_request(&id)).map(Some)
    }

    fn step(&self) -> String {
        format!("{:?}", self.0.step())
    }

    fn name(&self) -> &'static str {
        "DestinationHandler"
    }
}

#[cfg(test)]
mod tests {
    /// sha256 of the first 4096 octets of the file: the digest
    /// conformance/tests/test_tester_cfdp.py pins for harnesskit (the
    /// tester and the Python harnesses), so every side sends the octets
    /// every run has sent.
    const PAYLOAD_4096_SHA256: &str =
        "d41d438c379110c7f7b2c561b1f04f26c1b4549110791f8e022f48974280c13e";

    #[test]
    fn file_is_the_pattern_every_run_has_sent() {
        assert_eq!(
            crate::payload::sha256_hex(&super::pattern(4096)),
            PAYLOAD_4096_SHA256
        );
    }
}
