package consumer

import (
	"errors"
	"sync"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/ingest/schema"
	"github.com/handoff-dev/handoff/model"
)

// decode decodes d.msgs with the parallel workers into d.evb and d.dead.
func (c *Consumer) decode(d *decoded, nowMS int64) (valid, rejected int) {
	msgs := d.msgs
	w := c.workers
	if len(msgs) < 2000 {
		w = 1
	}
	for i := range d.evb {
		d.evb[i].Reset()
		d.dead[i] = d.dead[i][:0]
	}
	chunk := (len(msgs) + w - 1) / w
	var wg sync.WaitGroup
	for i := 0; i < w; i++ {
		lo := i * chunk
		hi := min(lo+chunk, len(msgs))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func(i int, part []kafka.Message) {
			defer wg.Done()
			dec := &c.dec[i]
			eb := &d.evb[i]
			for j := range part {
				m := &part[j]
				src := schema.Source{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset}
				// Decoded in place and copied once, into the batch's
				// columns: no model.Event, no attrs map.
				v, err := dec.DecodeView(m.Value)
				if err == nil {
					eb.AddView(v, src, nowMS)
					continue
				}
				kind := model.RejectBadJSON
				var ve *model.ValidationError
				if errors.As(err, &ve) && ve.Kind != "" {
					kind = ve.Kind
				}
				d.dead[i] = append(d.dead[i], schema.DeadLetter{
					ReceivedMS: nowMS, Source: src, Key: string(m.Key), Reason: kind, Error: err.Error(), Payload: m.Value,
				})
			}
		}(i, msgs[lo:hi])
	}
	wg.Wait()
	for i := range d.evb {
		valid += d.evb[i].Len()
		rejected += len(d.dead[i])
	}
	return valid, rejected
}
