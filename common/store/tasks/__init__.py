"""The task store's port (`TaskStore`) and what every caller of it uses, whatever the adapter:
which tasks a listing asks for, paging through them, the read-change-write loop of every task
change, turns on a task within a process, and documents that cannot be read back."""
