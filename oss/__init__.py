"""OSS: takes jobs, writes the whole task document, dispatches step 0, answers queries."""
