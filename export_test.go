package redlock

// SetSharedAttemptValue makes every attempt of c's Acquire calls write the
// same value (the bare token), as the library did before values were per
// attempt. It exists only for the negative control of the chaos suite,
// which shows that a delayed cleanup then deletes a later attempt's key.
// Call it before c is used.
func SetSharedAttemptValue(c *Client) { c.sharedValue = true }
