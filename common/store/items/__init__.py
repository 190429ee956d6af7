"""Item records of `for_each` steps: their port (`ItemStore`), the pure paging decisions both
adapters share, and opening them beside a task store. The adapters are in sqlite/ and mongo/."""
