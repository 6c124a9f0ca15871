package replay

import (
	"time"

	"github.com/handoff-dev/handoff/model"
)

// Status is the state of a batch's delivery as of a time (the status
// rules of docs/diagnosis.md).
type Status string

// Statuses, in the order the rules try them.
const (
	StatusBroken     Status = "broken"
	StatusDelivered  Status = "delivered"
	StatusFailed     Status = "failed"
	StatusLate       Status = "late"
	StatusInProgress Status = "in_progress"
)

// Statuses lists every Status, in the order the rules try them.
var Statuses = [...]Status{StatusBroken, StatusDelivered, StatusFailed, StatusLate, StatusInProgress}

// Support is what the evidence says of one hypothesis. It is not the
// diagnosis' verdict (a model.Hypothesis, where the delivery stopped): the
// verdict is the one hypothesis whose Support is Supported, or Delivered.
// On the wire it is the hypothesis' "verdict" field (docs/diagnosis.md).
type Support string

// What the evidence says of a hypothesis.
const (
	Excluded   Support = "excluded"
	Supported  Support = "supported"
	NoEvidence Support = "no_evidence"
)

// Supports lists every Support, in the order docs/diagnosis.md lists them.
var Supports = [...]Support{Excluded, Supported, NoEvidence}

// AnomalyKind names a kind of anomaly.
type AnomalyKind string

// Anomaly kinds (the anomaly table of docs/diagnosis.md).
const (
	IdentityMismatch       AnomalyKind = "identity_mismatch"
	RowMismatch            AnomalyKind = "row_mismatch"
	ChecksumMismatch       AnomalyKind = "checksum_mismatch"
	SignalBeforeFinal      AnomalyKind = "signal_before_final"
	DuplicateConsumption   AnomalyKind = "duplicate_consumption"
	OrphanConsumption      AnomalyKind = "orphan_consumption"
	ContinuityGap          AnomalyKind = "continuity_gap"
	SuccessWithoutArtifact AnomalyKind = "success_without_artifact"
	Late                   AnomalyKind = "late"
)

// AnomalyKinds lists every AnomalyKind.
var AnomalyKinds = [...]AnomalyKind{
	IdentityMismatch, RowMismatch, ChecksumMismatch, SignalBeforeFinal, DuplicateConsumption,
	OrphanConsumption, ContinuityGap, SuccessWithoutArtifact, Late,
}

// Breaks reports whether an anomaly of kind k makes the batch broken. Only
// late and continuity_gap do not: they are about time and neighbours, not
// about this batch's evidence contradicting itself.
func (k AnomalyKind) Breaks() bool { return k != Late && k != ContinuityGap }

// Diagnosis is the result of replaying one batch's timeline as of a time.
// Its JSON field names are part of handoff's contract with its users.
type Diagnosis struct {
	Batch        string `json:"batch"`
	Pipeline     string `json:"pipeline"`
	BusinessDate string `json:"business_date"`
	BatchID      string `json:"batch_id"`
	Status       Status `json:"status"`
	// Verdict is where the delivery stopped: the first hypothesis not
	// excluded, or model.Delivered.
	Verdict model.Hypothesis `json:"verdict"`
	// FirstMissing is the lowest required boundary with no proving event,
	// or "" when every required boundary is proven.
	FirstMissing string       `json:"first_missing"`
	Hypotheses   []Hypothesis `json:"hypotheses"`
	Anomalies    []Anomaly    `json:"anomalies"`
	AsOf         time.Time    `json:"as_of"`

	// Contract names the contract applied ("default" or its file).
	Contract string `json:"contract"`
	// Baseline names the learned baseline behind the boundaries'
	// UsuallyBy ("p95 over 28 days"; analyzer/learn), "" when none.
	Baseline string `json:"baseline,omitempty"`
	// Zone is the contract's time zone (UTC for the default contract),
	// for text that shows times beside UTC. JSON keeps every time in UTC
	// and does not carry it; nil reads as UTC.
	Zone       *time.Location  `json:"-"`
	Boundaries []BoundaryState `json:"boundaries"`
	NextStep   NextStep        `json:"next_step"`
	Events     int             `json:"events"`
	// Timeline is the batch's events as the replay read them, in time
	// order: the evidence every id above refers to. Narrate turns it into
	// sentences per side.
	Timeline []Entry `json:"timeline"`
	// Expected holds the names that derive from the batch's identity under
	// its contract ("" where the contract has no template).
	Expected Expected `json:"expected"`
	// Previous is what is known of the previous batch of the schedule; nil
	// when continuity was not checked.
	Previous *PreviousBatch `json:"previous,omitempty"`
	// Attempt places the batch among the attempts of its date (a re-run,
	// or a scheduled batch that was re-run); nil for a date's only
	// attempt.
	Attempt *AttemptInfo `json:"attempt,omitempty"`
	// Blocked names the upstream batches that are not delivered, and the
	// roots of their chains, when this batch is not delivered either; nil
	// otherwise.
	Blocked *Blocked `json:"blocked,omitempty"`
	// Alive lists the latest heartbeat of each process of the pipeline, as
	// of the diagnosis.
	Alive []Heartbeat `json:"alive"`
	// FirstEventAt and LastEventAt bound the batch's timeline.
	FirstEventAt time.Time `json:"first_event_at"`
	LastEventAt  time.Time `json:"last_event_at"`
	// Pending is the earliest evidence time at which an anomaly that
	// depends on the order of events, and holds now, would be confirmed
	// (the contract's allowed lateness after the event that raised it);
	// zero when none waits. It is not part of the JSON: it tells the
	// detector when to look again.
	Pending time.Time `json:"-"`
}

// AttemptInfo is where a batch stands among the attempts of its date.
type AttemptInfo struct {
	// Of is the scheduled batch the attempts are of.
	Of string `json:"of"`
	// Rerun is the batch's re-run number: 0 for the scheduled id.
	Rerun int `json:"rerun"`
	// Attempts lists the attempts with events, in re-run order.
	Attempts []string `json:"attempts"`
	// SupersededBy is the attempt that speaks for the date when it is not
	// this batch ("" when this batch does).
	SupersededBy string `json:"superseded_by,omitempty"`
}

// Superseded reports whether another attempt of the batch's date speaks
// for it.
func (d *Diagnosis) Superseded() bool { return d.Attempt != nil && d.Attempt.SupersededBy != "" }

// Hypothesis is one of the five hypotheses with what the evidence says of
// it and the events behind it.
type Hypothesis struct {
	Name model.Hypothesis `json:"name"`
	// Support is written as "verdict": the wire name is fixed (docs/diagnosis.md,
	// The diagnosis JSON), the Go name says what it holds.
	Support  Support  `json:"verdict"`
	Evidence []string `json:"evidence"`
	// Reason says in words why the support holds.
	Reason string `json:"reason"`
}

// Anomaly is a contradiction or a lapse in a batch's evidence.
type Anomaly struct {
	Kind     AnomalyKind `json:"kind"`
	Detail   string      `json:"detail"`
	Evidence []string    `json:"evidence"`
}

// BoundaryState is one rung of the ladder as the batch's evidence shows it.
type BoundaryState struct {
	Name string `json:"name"`
	// At is when the boundary was first proven (zero when not proven).
	At time.Time `json:"at,omitzero"`
	// Due is when the boundary is due (zero when no deadline is known).
	Due time.Time `json:"due,omitzero"`
	// UsuallyBy is by when the boundary usually arrives, the high quantile
	// of its learned baseline (Diagnosis.Baseline names it); zero when no
	// baseline is known.
	UsuallyBy time.Time `json:"usually_by,omitzero"`
	Evidence  []string  `json:"evidence"`
	Required  bool      `json:"required"`
	Proven    bool      `json:"proven"`
	Overdue   bool      `json:"overdue"`
	// OutOfOrder is set on a proven boundary above the first missing one:
	// the evidence exists, but the chain below it is broken.
	OutOfOrder bool `json:"out_of_order"`
}

// Entry is one event of a batch's timeline. Optional numbers carry a Has*
// flag, as in model.Event: zero rows is a count, not an absence.
type Entry struct {
	EventID    string          `json:"event_id"`
	Type       model.EventType `json:"type"`
	Time       time.Time       `json:"time"`
	System     model.System    `json:"system"`
	Component  string          `json:"component,omitempty"`
	Object     string          `json:"object,omitempty"`
	Rows       int64           `json:"rows,omitempty"`
	Bytes      int64           `json:"bytes,omitempty"`
	Checksum   string          `json:"checksum,omitempty"`
	Attempt    int64           `json:"attempt,omitempty"`
	Error      string          `json:"error,omitempty"`
	HasRows    bool            `json:"-"`
	HasBytes   bool            `json:"-"`
	HasAttempt bool            `json:"-"`
}

// Expected holds the names that derive from a batch's identity.
type Expected struct {
	BatchID  string `json:"batch_id,omitempty"`
	Artifact string `json:"artifact,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// PreviousBatch is the previous batch of the schedule, as a diagnosis
// reports it.
type PreviousBatch struct {
	Batch     string `json:"batch"`
	Seen      bool   `json:"seen"`
	Delivered bool   `json:"delivered"`
	// Verdict is the previous batch's verdict; it is meaningful, and
	// written, only when Seen.
	Verdict model.Hypothesis `json:"verdict"`
}

// Side is what one system (producer, exchange, consumer, operator) shows:
// the narrative form of the timeline (see Narrate).
type Side struct {
	System string `json:"system"`
	// Facts are short sentences, in time order, each naming its evidence.
	Facts []Fact `json:"facts"`
}

// Fact is one sentence of evidence.
type Fact struct {
	Text     string   `json:"text"`
	Evidence []string `json:"evidence"`
}

// Action is the stable identifier of a next step; Actions lists them all,
// and docs/diagnosis.md says when each is chosen (a test keeps the two
// lists equal).
type Action string

// Next-step actions.
const (
	ActionNone                      Action = "none"
	ActionCheckPreviousBatch        Action = "check_previous_batch"
	ActionInvestigateProducer       Action = "investigate_producer"
	ActionFinalizeArtifact          Action = "finalize_artifact"
	ActionTransferArtifact          Action = "transfer_artifact"
	ActionRestoreSignal             Action = "restore_signal"
	ActionInvestigateIdentification Action = "investigate_identification"
	ActionInvestigateConsumer       Action = "investigate_consumer"
	ActionResolveAnomaly            Action = "resolve_anomaly"
	ActionWait                      Action = "wait"
)

// Actions lists every Action.
var Actions = [...]Action{
	ActionNone, ActionCheckPreviousBatch, ActionInvestigateProducer, ActionFinalizeArtifact,
	ActionTransferArtifact, ActionRestoreSignal, ActionInvestigateIdentification,
	ActionInvestigateConsumer, ActionResolveAnomaly, ActionWait,
}

// NextStep is the safe next step for the batch.
type NextStep struct {
	Action  Action `json:"action"`
	Summary string `json:"summary"`
	// Checks must all pass before the action is safe. For restore_signal
	// they are the preconditions of docs/remediation.md.
	Checks []Check `json:"checks"`
	// Signal is the derived name of the completion signal to restore, when
	// the action is restore_signal.
	Signal string `json:"signal,omitempty"`
}

// Check is one precondition of a next step and what the evidence says of it.
type Check struct {
	Name     string     `json:"name"`
	State    CheckState `json:"state"`
	Detail   string     `json:"detail"`
	Evidence []string   `json:"evidence"`
}

// CheckState is what the evidence says of one precondition.
type CheckState string

// Check states. Unknown is not a pass: the evidence to decide is missing,
// and the action waits for a person to check by hand.
const (
	CheckPass    CheckState = "pass"
	CheckFail    CheckState = "fail"
	CheckUnknown CheckState = "unknown"
)

// CheckStates lists every CheckState.
var CheckStates = [...]CheckState{CheckPass, CheckFail, CheckUnknown}

// Delivered reports whether the diagnosis' verdict is delivered.
func (d *Diagnosis) Delivered() bool { return d.Verdict == model.Delivered }
