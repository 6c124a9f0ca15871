package stream_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/internal/testenv"
	"github.com/handoff-dev/handoff/internal/topics"
	"github.com/handoff-dev/handoff/judge/stream"
)

// recorder is a Handler that remembers what it was told.
type recorder struct {
	mu       sync.Mutex
	assigns  []stream.Assignment
	owned    map[int]bool
	folded   map[string]int // key -> times folded
	safe     time.Time
	revokes  int
	advances int
}

func newRecorder() *recorder { return &recorder{folded: map[string]int{}, owned: map[int]bool{}} }

func (r *recorder) Assign(_ context.Context, a stream.Assignment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.assigns = append(r.assigns, a)
	r.owned = map[int]bool{}
	for p := range a.Start {
		r.owned[p] = true
	}
	return nil
}

func (r *recorder) Fold(_ context.Context, m kafka.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.owned[m.Partition] {
		return fmt.Errorf("folded a message of partition %d, which is not owned", m.Partition)
	}
	r.folded[string(m.Key)]++
	return nil
}

func (r *recorder) Advance(_ context.Context, _, safe time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if safe.IsZero() {
		return fmt.Errorf("advanced with a zero safe time: no watermark yet")
	}
	if safe.Before(r.safe) {
		return fmt.Errorf("watermark went back from %v to %v", r.safe, safe)
	}
	r.safe = safe
	r.advances++
	return nil
}

func (r *recorder) Revoke(context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.revokes++
	r.owned = map[int]bool{}
}

func (r *recorder) snapshot() (folded map[string]int, owned []int, safe time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	folded = make(map[string]int, len(r.folded))
	for k, v := range r.folded {
		folded[k] = v
	}
	for p := range r.owned {
		owned = append(owned, p)
	}
	sort.Ints(owned)
	return folded, owned, r.safe
}

func produce(t *testing.T, brokers []string, topic string, from, n int) {
	t.Helper()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: &kafka.Hash{}, RequiredAcks: kafka.RequireAll, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		k := fmt.Sprintf("k%05d", from+i)
		msgs[i] = kafka.Message{Key: []byte(k), Value: []byte(k)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func setup(t *testing.T, partitions int) (brokers []string, topic string) {
	t.Helper()
	brokers = testenv.KafkaBrokers(t)
	topic = testenv.Topic(t, brokers, "stream")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := topics.Ensure(ctx, brokers, topics.Spec{Name: topic, Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	return brokers, topic
}

func start(t *testing.T, brokers []string, topic, group string, h stream.Handler) (stop func()) {
	t.Helper()
	return startTick(t, brokers, topic, group, h, 100*time.Millisecond)
}

func startTick(t *testing.T, brokers []string, topic, group string, h stream.Handler, tick time.Duration) (stop func()) {
	t.Helper()
	m, err := stream.NewMember(stream.Config{Brokers: brokers, Topic: topic, Group: group, Tick: tick, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return run(t, m, h)
}

// run runs m with h until stop (called at the test's end at the latest),
// which fails the test when the member stopped with an error or not
// within 30 s.
func run(t *testing.T, m *stream.Member, h stream.Handler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, h) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("member stopped with: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("member did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	return stop
}

func TestMemberFoldsCommitsAndResumes(t *testing.T) {
	brokers, topic := setup(t, 3)
	group := testenv.Name("group")
	produce(t, brokers, topic, 0, 300)
	produced := time.Now()

	r := newRecorder()
	stop := start(t, brokers, topic, group, r)
	testenv.Eventually(t, 60*time.Second, "every message folded and the watermark past the production", func() (bool, string) {
		folded, owned, safe := r.snapshot()
		return len(folded) == 300 && safe.After(produced), fmt.Sprintf("folded %d of 300, owned %v, safe %v", len(folded), owned, safe)
	})
	folded, owned, _ := r.snapshot()
	if len(owned) != 3 {
		t.Fatalf("one member owns %v, want all 3 partitions", owned)
	}
	for k, n := range folded {
		if n != 1 {
			t.Fatalf("%s folded %d times", k, n)
		}
	}
	client := &kafka.Client{Addr: kafka.TCP(brokers...)}
	ends, err := stream.EndOffsets(context.Background(), client, topic, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "offsets committed up to the end", func() (bool, string) {
		c, err := stream.Committed(context.Background(), client, group, topic, []int{0, 1, 2})
		if err != nil {
			return false, err.Error()
		}
		for p, e := range ends {
			if c[p] != e {
				return false, fmt.Sprintf("committed %v, ends %v", c, ends)
			}
		}
		return true, ""
	})
	stop()

	// A new member of the same group starts where the first committed:
	// nothing is folded twice, and new messages are folded.
	r2 := newRecorder()
	start(t, brokers, topic, group, r2)
	produce(t, brokers, topic, 300, 30)
	testenv.Eventually(t, 60*time.Second, "the resumed member folds only the new messages", func() (bool, string) {
		folded, _, _ := r2.snapshot()
		return len(folded) == 30, fmt.Sprintf("folded %d, want 30", len(folded))
	})
	r2.mu.Lock()
	first := r2.assigns[0]
	r2.mu.Unlock()
	for p, e := range ends {
		if first.Start[p] != e {
			t.Fatalf("resumed at %v, want the committed %v", first.Start, ends)
		}
	}
	if first.Partitions != 3 {
		t.Fatalf("Assignment.Partitions = %d, want 3", first.Partitions)
	}
	folded, _, _ = r2.snapshot()
	for k := range folded {
		if k < "k00300" {
			t.Fatalf("resumed member folded the old message %s again", k)
		}
	}
}

func TestMemberRebalanceSplitsPartitions(t *testing.T) {
	brokers, topic := setup(t, 4)
	group := testenv.Name("group")
	produce(t, brokers, topic, 0, 200)

	a, b := newRecorder(), newRecorder()
	start(t, brokers, topic, group, a)
	testenv.Eventually(t, 60*time.Second, "the first member folds everything", func() (bool, string) {
		folded, _, _ := a.snapshot()
		return len(folded) == 200, fmt.Sprintf("folded %d of 200", len(folded))
	})
	start(t, brokers, topic, group, b)
	testenv.Eventually(t, 60*time.Second, "the group splits the partitions between the two members", func() (bool, string) {
		_, oa, _ := a.snapshot()
		_, ob, _ := b.snapshot()
		if len(oa)+len(ob) != 4 || len(oa) == 0 || len(ob) == 0 {
			return false, fmt.Sprintf("a owns %v, b owns %v", oa, ob)
		}
		seen := map[int]bool{}
		for _, p := range append(oa, ob...) {
			if seen[p] {
				return false, fmt.Sprintf("partition %d owned twice: a %v, b %v", p, oa, ob)
			}
			seen[p] = true
		}
		return true, ""
	})
	produce(t, brokers, topic, 200, 100)
	testenv.Eventually(t, 60*time.Second, "new messages folded by their partition's owner", func() (bool, string) {
		fa, _, _ := a.snapshot()
		fb, _, _ := b.snapshot()
		n := 0
		for i := 200; i < 300; i++ {
			k := fmt.Sprintf("k%05d", i)
			if fa[k]+fb[k] > 0 {
				n++
			}
		}
		return n == 100, fmt.Sprintf("%d of 100 new messages folded", n)
	})
}

// slowTakeover is a recorder whose first Assign (a takeover reading a
// long history) lasts until its context is cancelled.
type slowTakeover struct {
	*recorder
	calls     int
	entered   chan struct{}
	cancelled chan struct{}
}

func (s *slowTakeover) Assign(ctx context.Context, a stream.Assignment) error {
	if s.calls++; s.calls == 1 {
		close(s.entered)
		<-ctx.Done()
		close(s.cancelled)
		return ctx.Err()
	}
	return s.recorder.Assign(ctx, a)
}

// TestMemberCancelsTakeoverOnRebalance: a member still taking over its
// partitions when a second member joins has the takeover cancelled (the
// group rebalanced: what it read of partitions now the other's would be
// wasted), goes on with the next generation's share, not stopping, and
// between them the two fold every message.
func TestMemberCancelsTakeoverOnRebalance(t *testing.T) {
	brokers, topic := setup(t, 4)
	group := testenv.Name("group")
	produce(t, brokers, topic, 0, 200)

	a := &slowTakeover{recorder: newRecorder(), entered: make(chan struct{}), cancelled: make(chan struct{})}
	b := newRecorder()
	start(t, brokers, topic, group, a)
	select {
	case <-a.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the first member was given no partitions within 60 s")
	}
	start(t, brokers, topic, group, b)
	select {
	case <-a.cancelled:
	case <-time.After(60 * time.Second):
		t.Fatal("the first member's takeover was not cancelled within 60 s of the second member's start")
	}
	shareAll(t, a.recorder, b)
}

// TestMemberNoAdvanceBeforeWatermark: a member that starts on a backlog
// ticks (every millisecond here) long before it has folded the messages
// that were in the topic; until then it has no watermark and must not
// advance its handler (the recorder fails on a zero safe time): a
// detector advanced then judged every batch as of no evidence.
func TestMemberNoAdvanceBeforeWatermark(t *testing.T) {
	brokers, topic := setup(t, 2)
	produce(t, brokers, topic, 0, 20000)
	r := newRecorder()
	stop := startTick(t, brokers, topic, testenv.Name("group"), r, time.Millisecond)
	testenv.Eventually(t, 60*time.Second, "the member folds the backlog and advances", func() (bool, string) {
		folded, _, safe := r.snapshot()
		return len(folded) == 20000 && !safe.IsZero(), fmt.Sprintf("folded %d of 20000, safe %v", len(folded), safe)
	})
	stop() // fails the test if the member stopped on a zero safe time
}

// scheduler is a recorder with deadlines (stream.Scheduler): NextDue is
// the first of them after the last safe time.
type scheduler struct {
	*recorder
	dues []time.Time
	// early is set when an Advance's safe time reached a deadline before
	// every message produced before that deadline was folded.
	early string
	want  int // messages produced before the first deadline
}

func (s *scheduler) NextDue() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.dues {
		if d.After(s.safe) {
			return d
		}
	}
	return time.Time{}
}

func (s *scheduler) Advance(ctx context.Context, now, safe time.Time) error {
	s.mu.Lock()
	if !safe.Before(s.dues[0]) && len(s.folded) < s.want && s.early == "" {
		s.early = fmt.Sprintf("safe %v past the deadline %v with %d of %d messages folded", safe, s.dues[0], len(s.folded), s.want)
	}
	s.mu.Unlock()
	return s.recorder.Advance(ctx, now, safe)
}

// TestMemberAdvancesAtDeadlines: with a tick of an hour, a handler that
// tells its deadlines is still advanced past each of them once it falls
// due, and only once every message produced before it has been folded.
func TestMemberAdvancesAtDeadlines(t *testing.T) {
	brokers, topic := setup(t, 3)
	produce(t, brokers, topic, 0, 300)
	now := time.Now()
	s := &scheduler{recorder: newRecorder(), want: 300,
		dues: []time.Time{now.Add(500 * time.Millisecond), now.Add(1500 * time.Millisecond)}}
	startTick(t, brokers, topic, testenv.Name("group"), s, time.Hour)
	testenv.Eventually(t, 60*time.Second, "the member advances past both deadlines without a tick", func() (bool, string) {
		_, _, safe := s.snapshot()
		return !safe.Before(s.dues[1]), fmt.Sprintf("safe %v, deadlines %v", safe, s.dues)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.early != "" {
		t.Fatal(s.early)
	}
	if s.advances > 4 {
		t.Fatalf("%d advances for two deadlines and no tick: the member woke for nothing", s.advances)
	}
}

// TestMemberReportsDeadlineStages: each deadline's way from falling due to
// the handler having advanced past it is reported stage by stage, in
// order, once (what handoff_detect_stage_seconds shows).
func TestMemberReportsDeadlineStages(t *testing.T) {
	brokers, topic := setup(t, 2)
	produce(t, brokers, topic, 0, 100)
	now := time.Now()
	s := &scheduler{recorder: newRecorder(), want: 100,
		dues: []time.Time{now.Add(500 * time.Millisecond), now.Add(1500 * time.Millisecond)}}
	m, err := stream.NewMember(stream.Config{Brokers: brokers, Topic: topic, Group: testenv.Name("group"), Tick: time.Hour, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		stages []stream.Stage
	)
	m.OnStage(func(st stream.Stage, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d < 0 {
			t.Errorf("stage %s took %v", st, d)
		}
		stages = append(stages, st)
	})
	defer run(t, m, s)()
	testenv.Eventually(t, 60*time.Second, "the member advances past both deadlines", func() (bool, string) {
		_, _, safe := s.snapshot()
		return !safe.Before(s.dues[1]), fmt.Sprintf("safe %v, deadlines %v", safe, s.dues)
	})
	testenv.Eventually(t, 10*time.Second, "the stages of both deadlines reported", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(stages) >= 8, fmt.Sprintf("stages %v", stages)
	})
	mu.Lock()
	defer mu.Unlock()
	one := []stream.Stage{stream.StageFire, stream.StageEnds, stream.StageReach, stream.StageAdvance}
	want := append(append([]stream.Stage{}, one...), one...)
	if fmt.Sprint(stages) != fmt.Sprint(want) {
		t.Fatalf("stages %v, want %v", stages, want)
	}
}

// safes is a scheduler that remembers the safe time of every Advance.
type safes struct {
	*scheduler
	seen []time.Time
}

func (s *safes) Advance(ctx context.Context, now, safe time.Time) error {
	s.mu.Lock()
	s.seen = append(s.seen, safe)
	s.mu.Unlock()
	return s.scheduler.Advance(ctx, now, safe)
}

// TestMemberReadsAheadOfDeadline: with a tick of an hour, the member
// advances once Lead ahead of a deadline (its end offsets read then), so
// that the advance at the deadline has only the last moments to judge;
// the deadline's own advance still waits for every message before it.
func TestMemberReadsAheadOfDeadline(t *testing.T) {
	brokers, topic := setup(t, 2)
	produce(t, brokers, topic, 0, 100)
	const lead = 3 * time.Second
	due := time.Now().Add(8 * time.Second)
	s := &safes{scheduler: &scheduler{recorder: newRecorder(), want: 100, dues: []time.Time{due}}}
	m, err := stream.NewMember(stream.Config{Brokers: brokers, Topic: topic, Group: testenv.Name("group"), Tick: time.Hour, Lead: lead, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer run(t, m, s)()
	testenv.Eventually(t, 60*time.Second, "the member advances past the deadline", func() (bool, string) {
		_, _, safe := s.snapshot()
		return !safe.Before(due), fmt.Sprintf("safe %v, deadline %v", safe, due)
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.early != "" {
		t.Fatal(s.early)
	}
	ahead := false
	for _, sf := range s.seen {
		ahead = ahead || (!sf.Before(due.Add(-lead)) && sf.Before(due))
	}
	if !ahead {
		t.Fatalf("no advance with a safe time in the %v before the deadline %v: safe times %v", lead, due, s.seen)
	}
}

// slowAdvance is a recorder whose first Advance (a long judging pass,
// publishing as it goes) lasts until its context is cancelled, and then,
// for as long as hold or until other is assigned, goes on as if it were
// still publishing its last records.
type slowAdvance struct {
	*recorder
	hold      time.Duration
	other     chan struct{} // closed when the other member is assigned
	calls     int
	entered   chan struct{}
	cancelled chan struct{}
	returned  chan struct{}
	// overlap: the other member was assigned while this one was still
	// in its advance (read once returned is closed).
	overlap bool
}

func (s *slowAdvance) Advance(ctx context.Context, now, safe time.Time) error {
	if s.calls++; s.calls > 1 {
		return s.recorder.Advance(ctx, now, safe)
	}
	close(s.entered)
	<-ctx.Done()
	close(s.cancelled)
	select {
	case <-s.other:
		s.overlap = true
	case <-time.After(s.hold):
	}
	close(s.returned)
	return ctx.Err()
}

// announcing is a recorder that closes assigned at its first Assign.
type announcing struct {
	*recorder
	assigned chan struct{}
	once     sync.Once
}

func (a *announcing) Assign(ctx context.Context, as stream.Assignment) error {
	a.once.Do(func() { close(a.assigned) })
	return a.recorder.Assign(ctx, as)
}

// TestMemberCutsAdvanceOnRebalance: a member in the middle of an advance
// (a detector publishing findings) when a second member joins has the
// advance's context cancelled, and the group gives the second member its
// partitions only once the first has returned from that advance: the
// partitions' next owner reads back what was published until it took
// them over, and a record published after would be missed. The first
// member goes on with the next generation, not stopping.
func TestMemberCutsAdvanceOnRebalance(t *testing.T) {
	brokers, topic := setup(t, 4)
	group := testenv.Name("group")
	produce(t, brokers, topic, 0, 200)

	b := &announcing{recorder: newRecorder(), assigned: make(chan struct{})}
	// hold is well inside the group's rebalance timeout (6 s here), so the
	// group waits for the first member rather than dropping it.
	a := &slowAdvance{recorder: newRecorder(), hold: 2 * time.Second, other: b.assigned,
		entered: make(chan struct{}), cancelled: make(chan struct{}), returned: make(chan struct{})}
	start(t, brokers, topic, group, a)
	select {
	case <-a.entered:
	case <-time.After(60 * time.Second):
		t.Fatal("the first member did not advance within 60 s")
	}
	start(t, brokers, topic, group, b)
	select {
	case <-a.cancelled:
	case <-time.After(60 * time.Second):
		t.Fatal("the first member's advance was not cancelled within 60 s of the second member's start")
	}
	select {
	case <-b.assigned:
	case <-time.After(60 * time.Second):
		t.Fatal("the second member was given no partitions within 60 s")
	}
	<-a.returned // within hold of cancelled
	if a.overlap {
		t.Error("the second member was given partitions while the first was still in its advance")
	}
	shareAll(t, a.recorder, b.recorder)
}

// shareAll waits until a and b own the four partitions between them, each
// some, and between them have folded all 200 messages (k00000..k00199).
func shareAll(t *testing.T, a, b *recorder) {
	t.Helper()
	testenv.Eventually(t, 60*time.Second, "the two members share the partitions and fold every message", func() (bool, string) {
		fa, oa, _ := a.snapshot()
		fb, ob, _ := b.snapshot()
		if len(oa) == 0 || len(ob) == 0 || len(oa)+len(ob) != 4 {
			return false, fmt.Sprintf("a owns %v, b owns %v", oa, ob)
		}
		n := 0
		for i := range 200 {
			k := fmt.Sprintf("k%05d", i)
			if fa[k]+fb[k] > 0 {
				n++
			}
		}
		return n == 200, fmt.Sprintf("%d of 200 messages folded", n)
	})
}
