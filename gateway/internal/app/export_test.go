package app

// WaitRefills waits for the batches being fetched ahead in the background.
func (s *Service) WaitRefills() { s.refills.Wait() }
