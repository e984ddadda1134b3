------------------------------ MODULE TraceCore ------------------------------
(***************************************************************************)
(* Trace validation of a captured run against a protocol model, for every  *)
(* protocol (the method of Cirstea, Kuppe, Merz et al., "Validating traces *)
(* of distributed programs against TLA+ specifications", 2024, and         *)
(* tlaplus/Examples EWD998ChanTrace.tla).                                  *)
(*                                                                         *)
(* The trace is what the wire showed, one line per event, in time order    *)
(* (conformance/tracecheck.py writes it from the two captures and the      *)
(* channel's log):                                                         *)
(*   "send"    an actor put a unit on the wire (dir: the direction);       *)
(*   "arrive"  the unit reached the other actor's interface;               *)
(*   "lose"    the channel dropped it;                                     *)
(*   "exit"    an actor's process ended (it takes no step after that);     *)
(*   "end"     the captures end.                                           *)
(*                                                                         *)
(* The protocol's trace module extends this one and its model, and runs   *)
(*     TraceNext == \/ Next /\ ModelStep(lastEvent')                        *)
(*                  \/ UNCHANGED model /\ LineStep(Settled)                   *)
(* where the model's lastEvent records each step: the actor, the unit it    *)
(* consumed (rx), the units it emitted (tx) and, for the channel, the unit *)
(* it lost.                                                                *)
(* The cursor l is the next trace line.  A model step is free to happen    *)
(* between lines, but:                                                     *)
(*   - a step that consumes a unit takes the oldest unit that arrived at   *)
(*     its actor and is not processed yet (inq: implementations read their *)
(*     socket in order);                                                   *)
(*   - what a step emits waits in pend until a "send" line shows it; no    *)
(*     more may wait than the rest of the trace sends, and by the trace's  *)
(*     end every timer's emission has been sent;                           *)
(*   - a timer's expiry that emits (the protocol's Foreseeable actions) is *)
(*     taken only where the trace shows its emission among the actor's     *)
(*     next sends, after at most those it already has waiting (SentSoon),  *)
(*     and its emission is due within the actor's window of the next line: *)
(*     an implementation sends what a timer made when the timer fires, so  *)
(*     an expiry placed any earlier only multiplies the behaviours, or     *)
(*     passes off what the timer made as made before arrivals that would   *)
(*     have prevented it;                                                  *)
(*   - a step that emits without consuming and is no timer's (the          *)
(*     protocol's OnDemand actions: a sender's new data, say) is taken     *)
(*     only where the trace needs it (Wanted): the current line is a send  *)
(*     of its actor that nothing waiting shows, and the step emits that    *)
(*     unit or is on the way to it (the protocol's OnTheWay); or an        *)
(*     arrival waits at its actor; or the trace is over (a step on the way *)
(*     to nothing, the protocol's OwnLineOnly, only at the line that sends *)
(*     what it emits, or once the trace is over).  Such a step can         *)
(*     always be put off until then: other actors' steps do not read its   *)
(*     actor's state, and its emission has no deadline; so no behaviour    *)
(*     that takes the trace is lost, and the orders of early emissions are *)
(*     not explored;                                                       *)
(*   - with LazyArrivals, an actor processes an arrival only where the     *)
(*     trace needs it to (Needs): the current line is a send of its that   *)
(*     nothing waiting shows, its exit or the end, or its oldest arrival   *)
(*     would be overdue there; or the trace is over.  Processing can       *)
(*     always be put off until then, for the same reasons, but for one:   *)
(*     a request (AsksFor) is processed before a "send" line of a unit it  *)
(*     asks for, so that the send meets what it obliges, as in the eager   *)
(*     pass; OnDemand steps then wait for the same moments;                *)
(*   - the channel loses a unit only at a "lose" line for it;              *)
(*   - obligations: a request the standard says must be answered with      *)
(*     given units (a CFDP NAK: every segment it asks for) obliges its       *)
(*     actor to put each of them on the wire by a deadline; the protocol's   *)
(*     trace module says which step obliges what (OwesAfter, substituted in  *)
(*     the .cfg), and a line later than an unmet deadline is not taken.      *)
(*     Unlike pend, what a model step emits, an obligation is met by any     *)
(*     send of the unit, however the model came to send it;                 *)
(*   - reaction window: before a line at time t is taken, every unit that  *)
(*     arrived before t - Window has been processed, and every unit a      *)
(*     processed arrival made the model emit is on the wire by             *)
(*     arrival + Window (a timer's emission, by Window after the next line *)
(*     when it fired: timers expire at any time in a trace model, and send *)
(*     what they make at once).  Window (microseconds) is below the        *)
(*     scenario's smallest retransmission timer, so that a late reply is   *)
(*     not mistaken for a timer's.  An actor whose user may suspend it     *)
(*     (CFDP's suspend request) has Hold[a] more: the longest it may sit   *)
(*     suspended, its arrivals unprocessed and its answers unsent.         *)
(* Eager (a first, cheaper pass): every arrival is processed as it        *)
(* arrives, and a timer's emission happens as the line that sends it.  Its *)
(* behaviours are some of those above, so a trace it                      *)
(* accepts is accepted; a trace it rejects is checked again without it.    *)
(* The trace is accepted when some behaviour takes every line (Furthest   *)
(* says so); the first line no behaviour takes is the deviation.  Actors   *)
(* are "sender" (sends "forward") and "receiver" (sends "return");         *)
(* "channel" is the channel.                                               *)
(*                                                                         *)
(* The trace itself is the module TraceData, which conformance/tracecheck   *)
(* writes for each run (specs/trace/TraceData.tla is an empty one):         *)
(*   Units    the trace's distinct units (segments, PDUs), each once        *)
(*   LineKinds  the distinct [k: kind, d: dir, a: actor] of the lines      *)
(*   TraceKind, TraceUnit, TraceTime  the lines, as three sequences of     *)
(*            numbers: LineKinds' and Units' numbers and the time in       *)
(*            microseconds (compact: a long trace's cost is mostly SANY    *)
(*            parsing it); LineAt(i) is line i whole                       *)
(*   Window   the reaction window, in microseconds                         *)
(*   LateWindow  the longest reaction time the late pass allows (Hurried)  *)
(*   Hold     actor -> the microseconds its user may hold it suspended     *)
(*   HoldEnds  actor -> <<earliest, latest>>: when its user's resume of  *)
(*            it comes (latest Never: no resume); the protocol's trace     *)
(*            module, which knows when an actor is held, reads it          *)
(*   SendsLeft  SendsLeft[i] is the number of "send" lines from line i on   *)
(*   Foreseeable  the model's timer actions held to SentSoon                *)
(*   OnDemand  the model's actions that emit without consuming, held to     *)
(*            Wanted                                                       *)
(*   LazyArrivals  arrivals processed only where the trace Needs it?       *)
(*   NextSend  NextSend[d][i] is the first "send" line in direction d from  *)
(*            line i on (TraceLen + 1: none); empty if Foreseeable is       *)
(*   Eager    the cheaper first pass (above)?                              *)
(*   StopAtEnd  stop at the first state past the last line?  FALSE: explore *)
(*            every behaviour that takes the trace, so that the protocol's *)
(*            trace module can print each outcome reached at the end       *)
(*   Purging  the model's actions that cancel a session, whose queued      *)
(*            emissions may then be deleted                                *)
(* They are definitions, not constants bound in the .cfg: TLC evaluates a  *)
(* zero-arity definition once, but a constant bound to one (C <- D) at     *)
(* every use, which for a trace of thousands of lines is thousands of      *)
(* times slower.                                                           *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC, TraceData

\* OwesAfter(e, t0): owes once model step e (lastEvent') is taken, t0 the
\* time the arrival it processes reached its actor (for a step that
\* processes none, the time of the next line).  The protocol's trace module
\* defines it from owes, the model's state before and after, and e; the
\* .cfg substitutes it (OwesAfter <- ...).  TraceCore removes what the
\* taken line sends.
CONSTANT OwesAfter(_, _)
\* OwesMet(o, L): the obligations o without those the taken line L meets
\* (Met: a send of the unit owed; a protocol may add others, as a notice
\* of cancellation ends what its session owed).
CONSTANT OwesMet(_, _)
\* OnTheWay(e, u): the OnDemand step e (lastEvent') may have to come before
\* a step that emits unit u, which the current line shows its actor
\* sending.  Wanted takes e there only if it emits u or OnTheWay says so.
\* It must hold wherever putting e off past the emission of u could lose a
\* behaviour that takes the trace: e makes a later step possible, or
\* changes what a later step does, or a step that ends e's chance must come
\* first (one that emits u, or the processing of an arrival that a
\* deadline may force before the line); the protocol's trace module defines it
\* (AnyOnTheWay: every step, where the protocol says no more) and the .cfg
\* substitutes it (OnTheWay <- ...).
CONSTANT OnTheWay(_, _)
\* AsksFor(r, u): unit r, a request, asks its receiver to send unit u (a
\* CFDP NAK, each segment it names).  With LazyArrivals, a "send" line of
\* u is taken only once every request for u that reached the sending actor
\* is processed: what a request obliges is met by the sends after it
\* (Met), and the eager pass, which processes each arrival as it comes,
\* orders them so.  NoneAsked: no unit asks for another.
CONSTANT AsksFor(_, _)
\* OwnLineOnly(e): the OnDemand step e is on the way to nothing (no later
\* step needs it, and nothing it emits has a deadline): Wanted takes it
\* only at a "send" line of what it emits.  Taken anywhere earlier, what it
\* emits could wait unsent in pend for as long as the trace liked, and pass
\* for a unit made while the model still allowed it (CFDP: a Keep Alive the
\* receiver may send only until the EOF is in).  NoneOwnLineOnly: no step.
CONSTANT OwnLineOnly(_)

VARIABLES
    l,          \* the next trace line
    cur,        \* that line, LineAt(l) (the last one once all are taken)
    pend,       \* <<dir, unit>> -> <<due time, ...>>: emitted, not yet on the wire
    inq,        \* actor -> Seq([seg, t]): arrived, not yet processed
    gone,       \* actors whose process has exited
    madeBy,     \* <<dir, unit>> -> <<action, answer?>>: the model's action
                \* that made the emission last put in pend, and whether it
                \* answered an arrival (diagnosis pass only, else <<>>)
    owes        \* <<dir, unit>> -> [due, at]: a unit a request obliged its
                \* actor to send by time due (the request reached it at at)

coreVars == <<l, cur, pend, inq, gone, madeBy, owes>>
\* The trace's state (madeBy is a note for the diagnosis, not state: a
\* view without it keeps the states of behaviours that differ only in
\* which action made an emission from counting as different).
coreState == <<l, cur, pend, inq, gone, owes>>
Actors == {"sender", "receiver"}

TxDir(a) == IF a = "sender" THEN "forward" ELSE "return"
RxActor(d) == IF d = "forward" THEN "receiver" ELSE "sender"

\* No deadline: a timer's emission may go out whenever (timers expire at
\* any time in the trace model), TLC's largest integer.
Never == 2147483647

\* An actor's reaction window: Window, and its suspension's length.
WindowOf(a) == Window + Hold[a]

Waiting(k) == IF k \in DOMAIN pend THEN Len(pend[k]) ELSE 0

\* Emissions not yet on the wire, all units together.
Owed(p) == LET F[D \in SUBSET DOMAIN p] ==
                 IF D = {} THEN 0
                 ELSE LET k == CHOOSE x \in D : TRUE IN Len(p[k]) + F[D \ {k}]
           IN F[DOMAIN p]

\* Emissions in direction d not yet on the wire.
WaitingIn(d) == Owed([k \in {x \in DOMAIN pend : x[1] = d} |-> pend[k]])

\* pend with one more copy of k, due at time d.
Emit(p, k, d) == IF k \in DOMAIN p THEN [p EXCEPT ![k] = Append(@, d)] ELSE p @@ (k :> <<d>>)
\* pend with the copy of k due first taken off.
Matched(p, k) ==
    IF Len(p[k]) = 1 THEN [x \in DOMAIN p \ {k} |-> p[x]] ELSE [p EXCEPT ![k] = Tail(@)]

EmitAll(p, d, tx, due) ==
    LET F[i \in 0 .. Len(tx)] == IF i = 0 THEN p ELSE Emit(F[i - 1], <<d, tx[i]>>, due)
    IN F[Len(tx)]

\* Nothing overdue at time t (see the reaction window above).  (IF, not \/:
\* inside an action TLC explores each disjunct as a branch of its own.)
Timely(t) ==
    /\ \A a \in Actors : IF inq[a] = <<>> THEN TRUE ELSE Head(inq[a]).t + WindowOf(a) >= t
    /\ \A k \in DOMAIN pend : \A i \in DOMAIN pend[k] : pend[k][i] >= t
    /\ \A k \in DOMAIN owes : owes[k].due >= t
\* At an actor's exit and at the trace's end, an arrival left unprocessed
\* is forgiven only within Window itself: what an actor holds longer (Hold)
\* it must have answered before it exits, or the wire would not show it.
TimelyAtEnd(t) ==
    /\ \A a \in Actors : IF inq[a] = <<>> THEN TRUE ELSE Head(inq[a]).t + Window >= t
    /\ \A k \in DOMAIN pend : \A i \in DOMAIN pend[k] : pend[k][i] >= t
    /\ \A k \in DOMAIN owes : owes[k].due >= t

\* The actor that owes obligation k.
Owing(k) == IF k[1] = "forward" THEN "sender" ELSE "receiver"

\* At an actor's exit (at the trace's end: every actor's), an obligation
\* it has not met is forgiven only if it fell due within Window of the line
\* (its deadline counted with Window alone), as an unprocessed arrival is:
\* however slow the actor may be (Hold), what it exits without sending it
\* never sent.  An obligation not timed yet (Never: the protocol defers it)
\* is forgiven.  The exit then drops the actor's obligations (Gone).
OwesAtExit(L) ==
    \A k \in DOMAIN owes :
        (L.kind = "end" \/ k[1] = TxDir(L.actor)) =>
            (owes[k].due = Never \/ owes[k].due - WindowOf(Owing(k)) + Window >= L.t)
Gone(o, L) == [k \in {x \in DOMAIN o : x[1] # TxDir(L.actor)} |-> o[k]]

\* No obligations; what a protocol without any substitutes for OwesAfter.
NoOwes == [k \in {} |-> [due |-> 0, at |-> 0]]
OwesKept(e, t0) == owes

\* Building blocks of a protocol's OwesAfter.  Deferred: o with each
\* obligation not timed yet (Never) for which Fires(k) holds now due at
\* due (a sender's first pass over, its deferred answers are due).
\* Owe: o and the new obligations asked, each one new (one kept as it was).
Deferred(o, Fires(_), due) ==
    [k \in DOMAIN o |-> IF o[k].due = Never /\ Fires(k) THEN [o[k] EXCEPT !.due = due] ELSE o[k]]
Owe(o, asked, new) == [k \in DOMAIN o \cup asked |-> IF k \in DOMAIN o THEN o[k] ELSE new]

\* o without the obligation the line L meets (a send of the unit owed).  An
\* actor that is sending what one request asked for keeps the rest alive:
\* each of that request's other units is then due no earlier than a window
\* after this send (an implementation may pace its sends, as long as it
\* does not stop).
Met(o, L) ==
    LET k0 == <<L.dir, L.seg>>
    IN IF L.kind = "send" /\ k0 \in DOMAIN o
       THEN [k \in DOMAIN o \ {k0} |->
                IF k[1] = L.dir /\ o[k].at = o[k0].at /\ o[k].due < L.t + WindowOf(Owing(k))
                THEN [o[k] EXCEPT !.due = L.t + WindowOf(Owing(k))]
                ELSE o[k]]
       ELSE o

\* The number of lines.
TraceLen == Len(TraceTime)

\* Line i, or the last line past the end.  The protocols' trace modules
\* read the current line from cur, never from the trace: TLC re-derives the
\* level of a definition that a .cfg substitutes at every use, through all
\* of the trace's literals, for a long trace many seconds at start-up.
LineAt(i) ==
    LET j == IF i <= TraceLen THEN i ELSE TraceLen
        c == LineKinds[TraceKind[j]]
    IN [kind |-> c.k, dir |-> c.d, actor |-> c.a, seg |-> Units[TraceUnit[j]], t |-> TraceTime[j]]

\* Unit u is among the n first "send" lines in direction d from line i on.
RECURSIVE SentAmong(_, _, _, _)
SentAmong(d, u, i, n) ==
    LET j == IF i <= TraceLen THEN NextSend[d][i] ELSE TraceLen + 1
    IN IF n = 0 \/ j > TraceLen THEN FALSE
       ELSE IF Units[TraceUnit[j]] = u THEN TRUE
       ELSE SentAmong(d, u, j + 1, n - 1)

\* A step e that emits without consuming (a timer's expiry) may be taken
\* now: it is not a Foreseeable action, or each of its emissions is among
\* the actor's next sends, after those it already has waiting.
\* (IF, not \/: inside an action TLC explores each disjunct.)
SentSoon(e) ==
    IF e.action \notin Foreseeable THEN TRUE
    ELSE LET d == TxDir(e.actor)
             n == WaitingIn(d) + Len(e.tx)
         IN \A i \in DOMAIN e.tx : SentAmong(d, e.tx[i], l, n)

\* The current line is a send of actor a's that nothing waiting shows: a
\* must make it.
Owes(a) == cur.kind = "send" /\ cur.dir = TxDir(a) /\ Waiting(<<cur.dir, cur.seg>>) = 0

\* The current line is a send of actor a's of a unit that an arrival still
\* queued at a asks for (AsksFor): a processes that arrival first.
Asked(a) ==
    /\ cur.kind = "send" /\ cur.dir = TxDir(a)
    /\ {i \in DOMAIN inq[a] : AsksFor(inq[a][i].seg, cur.seg)} # {}

\* The trace needs actor a to process an arrival now (see the header).
\* (IF, not \/: inside an action TLC explores each disjunct.)
Needs(a) ==
    IF l > TraceLen \/ cur.kind = "end" THEN TRUE
    ELSE IF cur.kind = "exit" /\ cur.actor = a THEN TRUE
    ELSE IF Owes(a) THEN TRUE
    ELSE IF Asked(a) THEN TRUE
    ELSE inq[a] # <<>> /\ Head(inq[a]).t + WindowOf(a) < cur.t

\* Every OnDemand step may be on the way to any unit (see OnTheWay).
AnyOnTheWay(e, u) == TRUE
\* No unit asks for another (see AsksFor).
NoneAsked(r, u) == FALSE
\* Every OnDemand step may be on the way to something (see OwnLineOnly).
NoneOwnLineOnly(e) == FALSE

\* A step e that emits without consuming may be taken now: it is not an
\* OnDemand action, or the trace needs it (see the header).
\* (IF, not \/: inside an action TLC explores each disjunct.)
Wanted(e) ==
    IF e.action \notin OnDemand \/ l > TraceLen THEN TRUE
    ELSE IF OwnLineOnly(e) THEN Owes(e.actor) /\ \E i \in DOMAIN e.tx : e.tx[i] = cur.seg
    ELSE IF Owes(e.actor)
         THEN IF \E i \in DOMAIN e.tx : e.tx[i] = cur.seg THEN TRUE ELSE OnTheWay(e, cur.seg)
    ELSE IF inq[e.actor] = <<>> THEN FALSE
    ELSE IF ~LazyArrivals THEN TRUE
    ELSE IF Asked(e.actor) THEN OnTheWay(e, cur.seg)
    ELSE Needs(e.actor)

CoreInit ==
    /\ l = 1
    /\ cur = LineAt(1)
    /\ pend = <<>>
    /\ inq = [a \in Actors |-> <<>>]
    /\ gone = {}
    /\ madeBy = <<>>
    /\ owes = NoOwes

\* The emissions a step finds still waiting: pend, or, for a step that
\* cancels its session (Purging: the actions that invoke the protocol's
\* cancel procedure, e.g. RFC 5326 6.19), also pend without the actor's
\* own: a cancelled session's queued segments may be deleted.
Unqueued(p, d) == [k \in {x \in DOMAIN p : x[1] # d} |-> p[k]]
Queues(e) ==
    IF e.action \in Purging THEN {pend, Unqueued(pend, TxDir(e.actor))} ELSE {pend}

\* Conjoined with a step of the model; e is what it did (its lastEvent').
\* In the eager pass a step that consumes a unit does so as the unit's
\* "arrive" line is taken, and a timer's emission as its "send" line is:
\* one TLC state for both, half the states of a long trace.
ModelStep(e) ==
    LET a == e.actor
        d == TxDir(a)
        L == cur
    IN
    /\ a \notin gone
    /\ \E q \in Queues(e) :
       CASE e.lost # <<>> ->
               \* the channel loses a unit at its "lose" line
               /\ l <= TraceLen
               /\ L.kind = "lose"
               /\ L.dir = e.dir
               /\ L.seg = e.lost[1]
               /\ Timely(L.t)
               /\ IF Eager THEN \A x \in Actors : inq[x] = <<>> ELSE TRUE
               /\ l' = l + 1
               /\ pend' = q
               /\ UNCHANGED inq
            [] e.rx # <<>> /\ Eager ->
               \* the unit is processed as its "arrive" line is taken
               /\ l <= TraceLen
               /\ L.kind = "arrive"
               /\ RxActor(L.dir) = a
               /\ L.seg = e.rx[1]
               /\ \A x \in Actors : inq[x] = <<>>
               /\ Timely(L.t)
               /\ l' = l + 1
               /\ pend' = EmitAll(q, d, e.tx, L.t + WindowOf(a))
               /\ UNCHANGED inq
            [] e.rx # <<>> ->
               \* the oldest unit that arrived and is not processed yet
               /\ inq[a] # <<>>
               /\ IF LazyArrivals THEN Needs(a) ELSE TRUE
               /\ Head(inq[a]).seg = e.rx[1]
               /\ inq' = [inq EXCEPT ![a] = Tail(@)]
               /\ pend' = EmitAll(q, d, e.tx, Head(inq[a]).t + WindowOf(a))
               /\ l' = l
            [] e.tx # <<>> /\ Eager ->
               \* a timer's emission, as the "send" line that shows it is taken
               /\ l <= TraceLen
               /\ L.kind = "send"
               /\ L.dir = d
               /\ \E i \in DOMAIN e.tx : e.tx[i] = L.seg
               /\ \A x \in Actors : inq[x] = <<>>
               /\ Timely(L.t)
               /\ pend' = Matched(EmitAll(q, d, e.tx, Never), <<d, L.seg>>)
               /\ l' = l + 1
               /\ UNCHANGED inq
            [] OTHER ->
               \* a timer's emission, or a step the wire does not show.  A
               \* timer fires at any time, but what it makes goes out when it
               \* fires: by the actor's window after the next line (the
               \* latest it can have fired); without that deadline a timer
               \* could fire long before the wire shows its emission, and a
               \* fault at a limit be declared before arrivals that undo it
               \* (a cfdp-rs mutant whose receiver never cleared a resent
               \* segment passed so, docs/mutation.md).  Other steps' emissions
               \* have none: Wanted takes them only where the trace needs them.
               /\ IF e.tx = <<>> THEN TRUE ELSE SentSoon(e) /\ Wanted(e)
               /\ pend' = EmitAll(q, d, e.tx,
                                  IF e.action \in Foreseeable THEN L.t + WindowOf(a) ELSE Never)
               /\ l' = l
               /\ UNCHANGED inq
    /\ Owed(pend') <= SendsLeft[l']
    /\ LET t0 == IF e.rx # <<>> /\ ~Eager /\ inq[a] # <<>> THEN Head(inq[a]).t ELSE L.t
           o == OwesAfter(e, t0)
       IN owes' = IF l' = l + 1 THEN OwesMet(o, L) ELSE o
    /\ cur' = LineAt(l')
    /\ madeBy' =
           LET new == [k \in {<<d, e.tx[i]>> : i \in DOMAIN e.tx} |-> <<e.action, e.rx # <<>>>>]
           IN CASE DiagLine = 0 \/ e.tx = <<>> -> madeBy
                \* an answer's emission is noted over a timer's, not the reverse:
                \* only an answer has a deadline to miss
                [] e.rx # <<>> -> new @@ madeBy
                [] OTHER -> madeBy @@ new
    /\ UNCHANGED gone

\* A line the model takes no step for (the model's variables unchanged).
\* Settled(a): actor a owes no prompt step (the protocol's trace module says
\* which steps are prompt: a notice or a close that follows at once from
\* what the actor holds, with nothing on the wire).  An actor is settled
\* when its process exits, and so is every actor still running when the
\* captures end: what each must have reported is then its state at the
\* trace's end.
LineStep(Settled(_)) ==
    LET L == cur
        k == <<L.dir, L.seg>>
    IN
    /\ l <= TraceLen
    /\ L.kind # "lose"
    /\ IF L.kind \in {"exit", "end"} THEN TimelyAtEnd(L.t) /\ OwesAtExit(L) ELSE Timely(L.t)
    /\ CASE L.kind = "exit" -> Settled(L.actor)
         [] L.kind = "end" -> \A a \in Actors \ gone : Settled(a)
         [] OTHER -> TRUE
    /\ IF Eager
       THEN \* arrivals are processed at once (ModelStep), except at an actor
            \* that has exited
            /\ \A a \in Actors : inq[a] = <<>>
            /\ L.kind = "arrive" => RxActor(L.dir) \in gone
       ELSE TRUE
    /\ CASE L.kind = "send" ->
                /\ Waiting(k) > 0
                \* every request for it that reached the actor is processed
                /\ ~Asked(L.actor)
                /\ pend' = Matched(pend, k)
                /\ UNCHANGED <<inq, gone>>
         [] L.kind = "arrive" ->
                /\ inq' = IF RxActor(L.dir) \in gone THEN inq
                          ELSE [inq EXCEPT ![RxActor(L.dir)] =
                                    Append(@, [seg |-> L.seg, t |-> L.t])]
                /\ UNCHANGED <<pend, gone>>
         [] L.kind = "exit" ->
                \* what the actor made with no deadline (a step the wire
                \* shows later, or a prompt one) it can no longer send: the
                \* trace's end would reject it (below); its exit says so
                /\ \A x \in DOMAIN pend :
                       IF x[1] = TxDir(L.actor) THEN \A i \in DOMAIN pend[x] : pend[x][i] # Never
                       ELSE TRUE
                /\ gone' = gone \cup {L.actor}
                /\ inq' = [inq EXCEPT ![L.actor] = <<>>]
                /\ UNCHANGED pend
         [] L.kind = "end" ->
                \* every timer's emission went out
                /\ \A x \in DOMAIN pend : \A i \in DOMAIN pend[x] : pend[x][i] # Never
                /\ UNCHANGED <<pend, inq, gone>>
    /\ owes' = IF L.kind = "exit" THEN Gone(owes, L) ELSE OwesMet(owes, L)
    /\ l' = l + 1
    /\ cur' = LineAt(l + 1)
    /\ UNCHANGED madeBy

\* An invariant that never fails: it prints the cursor each time it reaches
\* a line no state reached before (TLC register 1 holds the furthest line),
\* so that a rejected trace names the line it stopped at; past the last line
\* the trace is accepted, and TLC stops there (unless StopAtEnd is FALSE).  (Not a violated invariant:
\* TLC would print the whole behaviour, thousands of states of a long
\* trace.)
Furthest ==
    l > TLCGet(1) =>
        /\ TLCSet(1, l)
        /\ PrintT(<<"dtnc-trace-line", l>>)
        /\ l > TraceLen =>
               /\ PrintT(<<"dtnc-trace-accepted", l>>)
               \* the end's outcomes wanted (StopAtEnd FALSE): every
               \* behaviour that takes the trace is explored to its end
               /\ IF StopAtEnd THEN TLCSet("exit", TRUE) ELSE TRUE
\* An invariant that never fails either: it prints once (TLC register 4),
\* the first time a state's next line is held back by a deadline, the
\* reaction window above.  Timely is the only guard that reads the time, so
\* if no reachable state is held back, a longer window (more Hold) reaches
\* the same states and the same furthest line: the caller need not try it.
\* A state held back by an obligation that lapses even with the late
\* pass's longer window (LateWindow in place of its actor's window) is held
\* back in that pass too: it is not counted.
LateDue(k) == owes[k].due - WindowOf(Owing(k)) + LateWindow
Hurried ==
    (/\ l <= TraceLen
     /\ TLCGet(4) = 0
     /\ ~(IF cur.kind \in {"exit", "end"} THEN TimelyAtEnd(cur.t) ELSE Timely(cur.t))
     /\ ~\E k \in DOMAIN owes : owes[k].due < cur.t /\ LateDue(k) < cur.t) =>
        /\ TLCSet(4, 1)
        /\ PrintT(<<"dtnc-trace-deadline", l>>)
=============================================================================
