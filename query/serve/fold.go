package serve

import "github.com/handoff-dev/handoff/model"

// A read of every pipeline's events (the all-pipelines grid) passes a
// hundred thousand rows at 10,000 pipelines, and each costs about as much
// to scan out of the driver as to fold into the batches: the fold runs on
// a goroutine of its own (foldBehind), so that the two overlap on two
// cores instead of adding up. The events reach it in the order read, in
// blocks, so the set is the one the read would have built itself.

// foldBlock is how many events go to the fold at a time.
const foldBlock = 512

// foldBehind folds events on its own goroutine, in the order given to add.
type foldBehind struct {
	fold func(*model.Event)
	work chan []model.Event
	free chan []model.Event
	done chan struct{}
	buf  []model.Event
}

// newFoldBehind starts the goroutine that calls fold for each event added;
// the caller must call wait, whatever happens to the read.
func newFoldBehind(fold func(*model.Event)) *foldBehind {
	f := &foldBehind{fold: fold, work: make(chan []model.Event, 4), free: make(chan []model.Event, 4), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for b := range f.work {
			for i := range b {
				f.fold(&b[i])
			}
			select {
			case f.free <- b[:0]:
			default:
			}
		}
	}()
	f.buf = make([]model.Event, 0, foldBlock)
	return f
}

// add queues a copy of e.
func (f *foldBehind) add(e *model.Event) {
	f.buf = append(f.buf, *e)
	if len(f.buf) < foldBlock {
		return
	}
	f.work <- f.buf
	select {
	case f.buf = <-f.free:
	default:
		f.buf = make([]model.Event, 0, foldBlock)
	}
}

// wait folds what is queued and returns once every event added is folded.
func (f *foldBehind) wait() {
	if len(f.buf) > 0 {
		f.work <- f.buf
		f.buf = nil
	}
	close(f.work)
	<-f.done
}
