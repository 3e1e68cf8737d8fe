package stack

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisCommands returns how many commands Redis has executed so far: from the embedded server
// directly, or from INFO on a real one.
func (s *Stack) RedisCommands(ctx context.Context) (int, error) {
	if s.redis != nil {
		return s.redis.Commands(), nil
	}
	opt, err := redis.ParseURL(s.RedisURL)
	if err != nil {
		return 0, err
	}
	c := redis.NewClient(opt)
	defer c.Close()
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		return 0, fmt.Errorf("redis INFO: %w", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("redis INFO has no total_commands_processed")
}
