"""Players and the games between them: agents, outside engines, the arena, Elo ratings,
tournaments and the zoo of shipped agents."""
