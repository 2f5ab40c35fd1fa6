"""Entity kinds ("human", "city", ...): what a title can name, each one registered object
(tasks/entities/registry.py) defined in one module of tasks/entities/kinds/."""
