import PayhookApp
print(migrationsProbe())
