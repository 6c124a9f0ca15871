package consumer

import (
	"errors"

	"github.com/segmentio/kafka-go"

	"github.com/handoff-dev/handoff/model"
	"github.com/handoff-dev/handoff/store/schema"
)

// decodeChunk decodes msgs, a chunk of batch d, with worker w's decoder
// into d.evb[w] and d.dead[w] (each worker has its own, so chunks of one
// batch decode in parallel).
func (c *Consumer) decodeChunk(d *decoded, w int, msgs []kafka.Message) {
	dec := &c.dec[w]
	eb := &d.evb[w]
	for j := range msgs {
		m := &msgs[j]
		src := schema.Source{Topic: m.Topic, Partition: int32(m.Partition), Offset: m.Offset}
		// Decoded in place and copied once, into the batch's columns: no
		// model.Event, no attrs map.
		v, err := dec.DecodeView(m.Value)
		if err == nil {
			eb.AddView(v, src, d.nowMS)
			continue
		}
		kind := model.RejectBadJSON
		var ve *model.ValidationError
		if errors.As(err, &ve) && ve.Kind != "" {
			kind = ve.Kind
		}
		d.dead[w] = append(d.dead[w], schema.DeadLetter{
			ReceivedMS: d.nowMS, Source: src, Key: string(m.Key), Reason: kind, Error: err.Error(), Payload: m.Value,
		})
	}
}
