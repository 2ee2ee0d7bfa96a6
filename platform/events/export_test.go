package events

import "context"

// FanOut hands the hub the announcements of ids (id only, as a large event's
// is), in the order given, as one batch each: announcements arriving out of order.
func (h *Hub) FanOut(ctx context.Context, ids ...int64) {
	for _, id := range ids {
		h.fanOut(ctx, []announcement{{ID: id}})
	}
}

// Listen opens a stream of the audiences served by its own goroutine (not
// detached) and answers what the hub offers it.
func (h *Hub) Listen(user string, audiences []string) (<-chan *Record, error) {
	s, err := h.open(user, audiences)
	if err != nil {
		return nil, err
	}
	return s.ch, nil
}
