"""Fast paths of the hottest routes: a request FastAPI would accept skips its dependency solving
(route.py); the routes' own fast paths are in task_routes.py."""
